package main

import (
	"fmt"
	"os"

	"github.com/rcconform/rcconform/wire/capture"
)

func main() {
	f, _ := os.Open(os.Args[1])
	r, err := capture.NewReader(f, "x")
	if err != nil {
		panic(err)
	}
	for {
		fr, err := r.Next()
		if err != nil {
			break
		}
		_, off, err := fr.Network()
		if err != nil || len(fr.Data) < off+28+12 {
			continue
		}
		b := fr.Data[off+28:]
		qp := uint32(b[5])<<16 | uint32(b[6])<<8 | uint32(b[7])
		psn := uint32(b[9])<<16 | uint32(b[10])<<8 | uint32(b[11])
		if qp == 13457828 && psn >= 1838 && psn <= 1844 {
			fmt.Println(fr.Num, fr.Time.Format("15:04:05.000000"), "op", b[0], "psn", psn)
		}
	}
}
