package wire

import (
	"strings"
	"testing"
	"time"
)

// TestSyndromeAll256 classifies every syndrome byte (§9.7.5.2, Tables 43
// and 44).
func TestSyndromeAll256(t *testing.T) {
	for i := range 256 {
		s := uint8(i)
		a := AETH{Syndrome: s, MSN: 0xABCDEF}
		var want SyndromeKind
		switch s >> 5 & 3 {
		case 0:
			want = KindACK
		case 1:
			want = KindRNR
		case 2:
			want = KindReserved
		case 3:
			want = KindNAK
		}
		if got := a.Kind(); got != want {
			t.Errorf("syndrome %#02x: Kind() = %v, want %v", s, got, want)
		}
		if got := a.Value(); got != s&0x1F {
			t.Errorf("syndrome %#02x: Value() = %#x, want %#x", s, got, s&0x1F)
		}
		bit7 := s&0x80 != 0
		if got := a.ReservedBit(); got != bit7 {
			t.Errorf("syndrome %#02x: ReservedBit() = %v", s, got)
		}
		if got, w := a.IsACK(), s <= 0x1F; got != w {
			t.Errorf("syndrome %#02x: IsACK() = %v, want %v", s, got, w)
		}
		if got, w := a.IsRNR(), s >= 0x20 && s <= 0x3F; got != w {
			t.Errorf("syndrome %#02x: IsRNR() = %v, want %v", s, got, w)
		}
		for code := uint8(0); code < 32; code++ {
			if got, w := a.IsNAK(code), s == 0x60+code; got != w {
				t.Errorf("syndrome %#02x: IsNAK(%d) = %v, want %v", s, code, got, w)
			}
		}
		str := a.String()
		if str != SyndromeString(s) {
			t.Errorf("syndrome %#02x: String() %q != SyndromeString %q", s, str, SyndromeString(s))
		}
		if strings.HasPrefix(str, "R!") != bit7 {
			t.Errorf("syndrome %#02x: String() = %q, reserved-bit marker wrong", s, str)
		}
		body := strings.TrimPrefix(str, "R!")
		var prefix string
		switch want {
		case KindACK:
			prefix = "ACK cr=0x"
		case KindRNR:
			prefix = "RNR t="
		case KindNAK:
			prefix = "NAK"
		case KindReserved:
			prefix = "reserved 0x"
		}
		if !strings.HasPrefix(body, prefix) {
			t.Errorf("syndrome %#02x: String() = %q, want prefix %q", s, str, prefix)
		}
	}
	for _, tc := range []struct {
		s    uint8
		want string
	}{
		{0x00, "ACK cr=0x00"}, {0x1F, "ACK cr=0x1f"}, {0x20, "RNR t=0"}, {0x3F, "RNR t=31"},
		{0x60, "NAK seq"}, {0x61, "NAK inv-req"}, {0x62, "NAK rem-access"}, {0x63, "NAK rem-op"},
		{0x64, "NAK code=4"}, {0x40, "reserved 0x40"}, {0x80, "R!ACK cr=0x00"}, {0xE0, "R!NAK seq"},
	} {
		if got := SyndromeString(tc.s); got != tc.want {
			t.Errorf("SyndromeString(%#02x) = %q, want %q", tc.s, got, tc.want)
		}
	}
	for k, want := range []string{"ACK", "RNR NAK", "reserved", "NAK"} {
		if got := SyndromeKind(k).String(); got != want {
			t.Errorf("SyndromeKind(%d).String() = %q, want %q", k, got, want)
		}
	}
}

func TestSyndromeConstructors(t *testing.T) {
	for i := range 256 {
		v := uint8(i)
		if got := SynACK(v); got != v&0x1F || !(AETH{Syndrome: got}).IsACK() {
			t.Errorf("SynACK(%#x) = %#x", v, got)
		}
		if got := SynRNR(v); got != 0x20|v&0x1F || !(AETH{Syndrome: got}).IsRNR() {
			t.Errorf("SynRNR(%#x) = %#x", v, got)
		}
		if got := SynNAK(v); got != 0x60|v&0x1F || !(AETH{Syndrome: got}).IsNAK(v&0x1F) {
			t.Errorf("SynNAK(%#x) = %#x", v, got)
		}
	}
	// The NAK syndrome bytes of §9.7.5.2 (codes 0 to 3 for RC; 4, invalid
	// RD request, is RD's).
	if SynNAK(NAKPSNSequence) != 0x60 || SynNAK(NAKInvalidRequest) != 0x61 ||
		SynNAK(NAKRemoteAccess) != 0x62 || SynNAK(NAKRemoteOp) != 0x63 || SynNAK(NAKInvalidRD) != 0x64 {
		t.Error("NAK syndrome bytes differ from §9.7.5.2's 0x60 to 0x64")
	}
	if SynACK(CreditInvalid) != 0x1F {
		t.Error("SynACK(CreditInvalid) != 0x1F")
	}
}

// creditTableDoc is the credit table of docs/interpretations.md ("Credit
// table and rounding"), written out apart from the code's creditTable.
var creditTableDoc = map[uint8]int{
	0x00: 0, 0x01: 1, 0x02: 2, 0x03: 3, 0x04: 4, 0x05: 6, 0x06: 8, 0x07: 12,
	0x08: 16, 0x09: 24, 0x0A: 32, 0x0B: 48, 0x0C: 64, 0x0D: 96, 0x0E: 128, 0x0F: 192,
	0x10: 256, 0x11: 384, 0x12: 512, 0x13: 768, 0x14: 1024, 0x15: 1536, 0x16: 2048, 0x17: 3072,
	0x18: 4096, 0x19: 6144, 0x1A: 8192, 0x1B: 12288, 0x1C: 16384, 0x1D: 24576, 0x1E: 32768,
}

func TestCreditTable(t *testing.T) {
	for c := range 256 {
		code := uint8(c)
		n, ok := CreditCount(code)
		want, wantOK := creditTableDoc[code]
		if ok != wantOK || n != want {
			t.Errorf("CreditCount(%#02x) = %d, %v; want %d, %v", code, n, ok, want, wantOK)
		}
		if ok {
			if back := CreditCode(n); back != code {
				t.Errorf("CreditCode(CreditCount(%#02x) = %d) = %#02x", code, n, back)
			}
		}
	}
	// Counts between table entries round down to the entry below.
	for n := -5; n <= 70000; n++ {
		code := CreditCode(n)
		got, ok := CreditCount(code)
		if !ok || code >= CreditInvalid {
			t.Fatalf("CreditCode(%d) = %#02x, not a valid credit code", n, code)
		}
		if n >= 0 && got > n || n < 0 && code != 0 {
			t.Fatalf("CreditCode(%d) = %#02x (%d credits): more than available", n, code, got)
		}
		if next, ok := CreditCount(code + 1); ok && next <= n {
			t.Fatalf("CreditCode(%d) = %#02x (%d credits): code %#02x (%d) also fits", n, code, got, code+1, next)
		}
	}
	for _, tc := range []struct {
		n    int
		want uint8
	}{
		{0, 0}, {1, 1}, {4, 4}, {5, 4}, {6, 5}, {7, 5}, {11, 6}, {12, 7}, {100, 0x0D},
		{32767, 0x1D}, {32768, 0x1E}, {1 << 30, 0x1E}, {-1, 0},
	} {
		if got := CreditCode(tc.n); got != tc.want {
			t.Errorf("CreditCode(%d) = %#02x, want %#02x", tc.n, got, tc.want)
		}
	}
}

// rnrTableDoc is the RNR timer table of docs/interpretations.md ("RNR
// timer table", Table 45) in milliseconds × 100, written out apart from
// the code's rnrTable.
var rnrTableDoc = [32]int64{
	65536, 1, 2, 3, 4, 6, 8, 12,
	16, 24, 32, 48, 64, 96, 128, 192,
	256, 384, 512, 768, 1024, 1536, 2048, 3072,
	4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152,
}

func TestRNRDelay(t *testing.T) {
	for code := range 32 {
		want := time.Duration(rnrTableDoc[code]) * 10 * time.Microsecond
		if got := RNRDelay(uint8(code)); got != want {
			t.Errorf("RNRDelay(%d) = %v, want %v", code, got, want)
		}
		// Only the 5-bit code counts (the syndrome's low bits).
		if got := RNRDelay(uint8(code) | 0xE0); got != want {
			t.Errorf("RNRDelay(%#x) = %v, want %v", code|0xE0, got, want)
		}
	}
	if got := RNRDelay(0); got != 655360*time.Microsecond {
		t.Errorf("RNRDelay(0) = %v, want 655.36ms", got)
	}
	if got := RNRDelay(1); got != 10*time.Microsecond {
		t.Errorf("RNRDelay(1) = %v, want 10µs", got)
	}
	if got := RNRDelay(25); got != 61440*time.Microsecond {
		t.Errorf("RNRDelay(25) = %v, want 61.44ms (not rxe's 61.41 typo)", got)
	}
	if got := RNRDelay(31); got != 491520*time.Microsecond {
		t.Errorf("RNRDelay(31) = %v, want 491.52ms", got)
	}
}

func TestAckTimeout(t *testing.T) {
	if got := AckTimeout(0); got != 0 {
		t.Errorf("AckTimeout(0) = %v, want 0 (timer disabled)", got)
	}
	if got := AckTimeout(1); got != 8192*time.Nanosecond {
		t.Errorf("AckTimeout(1) = %v, want 8.192µs", got)
	}
	if got, want := AckTimeout(14), 67108864*time.Nanosecond; got != want {
		t.Errorf("AckTimeout(14) = %v, want %v", got, want)
	}
	// 4.096 µs × 2^31 = 8796.093022208 s.
	if got, want := AckTimeout(31), 8796093022208*time.Nanosecond; got != want {
		t.Errorf("AckTimeout(31) = %v, want %v", got, want)
	}
	for v := 1; v < 32; v++ {
		want := time.Duration(4096*(int64(1)<<v)) * time.Nanosecond
		if got := AckTimeout(uint8(v)); got != want {
			t.Errorf("AckTimeout(%d) = %v, want %v", v, got, want)
		}
	}
	// Only five bits count: 32 is 0 (disabled), 33 is 1.
	if AckTimeout(32) != 0 || AckTimeout(33) != AckTimeout(1) {
		t.Errorf("AckTimeout(32) = %v, AckTimeout(33) = %v", AckTimeout(32), AckTimeout(33))
	}
}
