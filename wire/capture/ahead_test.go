package capture

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
)

// choppy returns its data in reads of random sizes, then err.
type choppy struct {
	data []byte
	err  error
	rnd  *rand.Rand
}

func (c *choppy) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, c.err
	}
	n := min(len(p), 1+c.rnd.IntN(3*aheadLen/2), len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// TestAheadReader: reading ahead returns the bytes and then the error of
// the reader it reads, whatever the sizes of the reads on either side,
// and Close stops it part-way.
func TestAheadReader(t *testing.T) {
	boom := errors.New("boom")
	for seed := range uint64(20) {
		rnd := rand.New(rand.NewPCG(seed, 1))
		data := make([]byte, rnd.IntN(5*aheadLen))
		for i := range data {
			data[i] = byte(rnd.Uint32())
		}
		want := io.EOF
		if seed%2 == 1 {
			want = boom
		}
		a := newAheadReader(&choppy{data: data, err: want, rnd: rand.New(rand.NewPCG(seed, 2))})
		var got bytes.Buffer
		p := make([]byte, 1+rnd.IntN(100_000))
		var err error
		for err == nil {
			var n int
			n, err = a.Read(p)
			got.Write(p[:n])
		}
		if err != want || !bytes.Equal(got.Bytes(), data) {
			t.Errorf("seed %d: %d bytes then %v; want %d bytes then %v", seed, got.Len(), err, len(data), want)
		}
		if _, err2 := a.Read(p); err2 != want {
			t.Errorf("seed %d: the error is not sticky: %v", seed, err2)
		}
		a.Close()
	}
	// Closed before the end: the goroutine stops (Close waits for it).
	a := newAheadReader(&choppy{data: make([]byte, 20*aheadLen), err: io.EOF, rnd: rand.New(rand.NewPCG(1, 1))})
	if _, err := a.Read(make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	a.Close()
	a.Close()
}
