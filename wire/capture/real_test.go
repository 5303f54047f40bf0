package capture

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// sharedCaptures is where the team's real captures sit when a checkout has
// them beside the repository (not part of it; the tests that read them
// skip when absent), relative to this package's directory.
const sharedCaptures = "../../../shared/captures"

// rxeFrames are the frame counts of rxe/README.md.
var rxeFrames = map[string]int{
	"send-4k-mtu1024.pcap":   1546,
	"write-8k-mtu1024.pcap":  2753,
	"read-8k-mtu1024.pcap":   2749,
	"atomic-cas.pcap":        2051,
	"mix-ipv6-mtu1024.pcap":  1593,
	"send-4k-4qp-loss1.pcap": 5140,
	"errors.pcap":            40,
}

// provLinkTypes maps the link-type names of PROVENANCE.md (tshark's) to
// link types.
var provLinkTypes = map[string]uint32{"ether": LinkTypeEthernet, "erf": 197}

// provenance reads the packet count and link type of each file from the
// summary table of public/PROVENANCE.md.
func provenance(t *testing.T, path string) map[string]struct {
	frames   int
	linkType string
} {
	out := map[string]struct {
		frames   int
		linkType string
	}{}
	f, err := os.Open(path)
	if err != nil {
		t.Logf("no %s: %v", path, err)
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// | `file` | bytes | link type | pkts | ...
		cols := strings.Split(sc.Text(), "|")
		if len(cols) < 6 || !strings.HasPrefix(strings.TrimSpace(cols[1]), "`") {
			continue
		}
		name := strings.Trim(strings.TrimSpace(cols[1]), "`")
		n, err := strconv.Atoi(strings.TrimSpace(cols[4]))
		if err != nil {
			continue
		}
		out[name] = struct {
			frames   int
			linkType string
		}{n, strings.TrimSpace(cols[3])}
	}
	return out
}

// fileStats is what reading a real capture found.
type fileStats struct {
	format    string
	frames    int
	truncated int
	linkTypes map[uint32]int
	protos    map[string]int
}

func readCapture(t *testing.T, path string) fileStats {
	t.Helper()
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	st := fileStats{format: r.Format(), linkTypes: map[uint32]int{}, protos: map[string]int{}}
	prev := 0
	for {
		f, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("after %d frames: %v", st.frames, err)
		}
		if f.Num != prev+1 {
			t.Fatalf("frame number %d after %d", f.Num, prev)
		}
		prev = f.Num
		st.frames++
		st.linkTypes[f.LinkType]++
		if f.Truncated() {
			st.truncated++
		}
		proto, _, err := f.Network()
		switch {
		case errors.Is(err, ErrUnsupportedLinkType):
			st.protos["unsupported link type"]++
		case err != nil:
			st.protos[err.Error()]++
		default:
			st.protos[fmt.Sprintf("%#04x", proto)]++
		}
	}
	if st, _ := os.Stat(path); r.BytesRead() != st.Size() {
		t.Errorf("BytesRead() = %d, file size %d", r.BytesRead(), st.Size())
	}
	return st
}

func (s fileStats) String() string {
	var lts []string
	for lt, n := range s.linkTypes {
		lts = append(lts, fmt.Sprintf("%d (%s) x%d", lt, LinkTypeName(lt), n))
	}
	sort.Strings(lts)
	var protos []string
	for p, n := range s.protos {
		protos = append(protos, fmt.Sprintf("%s x%d", p, n))
	}
	sort.Strings(protos)
	return fmt.Sprintf("%s, %d frames (%d cut by snaplen), link types %s; network: %s",
		s.format, s.frames, s.truncated, strings.Join(lts, ", "), strings.Join(protos, ", "))
}

func TestRealCaptures(t *testing.T) {
	if _, err := os.Stat(sharedCaptures); err != nil {
		t.Skipf("no shared captures (%v); TestPcapVariants, TestPcapng and TestOpen read files built here", err)
	}
	t.Run("rxe", func(t *testing.T) {
		files, _ := filepath.Glob(filepath.Join(sharedCaptures, "rxe", "*.pcap"))
		if len(files) == 0 {
			t.Skip("no rxe captures")
		}
		for _, path := range files {
			name := filepath.Base(path)
			t.Run(name, func(t *testing.T) {
				st := readCapture(t, path)
				t.Logf("%s: %v", name, st)
				if want, ok := rxeFrames[name]; !ok {
					t.Logf("%s: not in the README table", name)
				} else if st.frames != want {
					t.Errorf("%d frames, README says %d", st.frames, want)
				}
				if st.protos["unsupported link type"] > 0 {
					t.Errorf("rxe capture with an unsupported link type")
				}
			})
		}
	})
	t.Run("public", func(t *testing.T) {
		files, _ := filepath.Glob(filepath.Join(sharedCaptures, "public", "*.pcap"))
		if len(files) == 0 {
			t.Skip("no public captures")
		}
		prov := provenance(t, filepath.Join(sharedCaptures, "public", "PROVENANCE.md"))
		for _, path := range files {
			name := filepath.Base(path)
			t.Run(name, func(t *testing.T) {
				st := readCapture(t, path)
				t.Logf("%s: %v", name, st)
				p, ok := prov[name]
				if !ok {
					t.Logf("%s: not in the PROVENANCE.md table", name)
					return
				}
				if st.frames != p.frames {
					t.Errorf("%d frames, PROVENANCE.md says %d", st.frames, p.frames)
				}
				if lt, ok := provLinkTypes[p.linkType]; ok && st.linkTypes[lt] != st.frames {
					t.Errorf("link types %v, PROVENANCE.md says %s", st.linkTypes, p.linkType)
				}
				// The ERF files are native InfiniBand records, every one.
				if p.linkType == "erf" && st.protos[fmt.Sprintf("%#04x", ProtoInfiniBand)] != st.frames {
					t.Errorf("protocols %v, want native InfiniBand in every frame", st.protos)
				}
			})
		}
	})
}
