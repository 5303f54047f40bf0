package refsim_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"

	"github.com/rcconform/rcconform/dut/sim/refsim"
	"github.com/rcconform/rcconform/dut/sim/simproto"
)

// FuzzServe feeds the protocol's server arbitrary request lines after
// hello: it never panics, answers every line with one JSON line carrying
// ok or an error code, and its time never goes backwards.
func FuzzServe(f *testing.F) {
	for _, s := range []string{
		`{"id":2,"op":"advance","until":1000}`,
		`{"id":2,"op":"create_qp","attr":{"mtu":1024,"remote_address":"10.0.0.2","remote_qpn":5}}` + "\n" + `{"id":3,"op":"reg_mr","qp":1,"length":4096}`,
		`{"id":2,"op":"frame","frame":"AgAAAAABAgAAAAACCABFAAA8"}`,
		`{"id":2,"op":"advance","until":-5}`,
		`{"id":2,"op":"poll_cq","qp":9}`,
		`not json`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := refsim.New(refsim.Options{})
		if err != nil {
			t.Fatal(err)
		}
		in = append([]byte(`{"id":1,"op":"hello","version":1}`+"\n"), in...)
		var out bytes.Buffer
		if err := simproto.Serve(bytes.NewReader(in), &out, s); err != nil {
			return // a line too long: refused as such
		}
		sc := bufio.NewScanner(&out)
		sc.Buffer(nil, simproto.MaxLine*2)
		last := int64(0)
		for sc.Scan() {
			var r simproto.Response
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("an answer that is not JSON: %q", sc.Bytes())
			}
			if !r.OK && r.Code == "" {
				t.Fatalf("a refusal without a code: %q", sc.Bytes())
			}
			if r.Time != nil {
				if *r.Time < last {
					t.Fatalf("time went back from %d to %d: %q", last, *r.Time, sc.Bytes())
				}
				last = *r.Time
			}
		}
	})
}
