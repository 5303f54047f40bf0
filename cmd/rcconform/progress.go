package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// progress draws a progress bar on stderr while a capture is read, based
// on the bytes read against the file's size. It draws only when stderr is
// a terminal, so it never mixes into redirected output or logs.
type progress struct {
	w     io.Writer // nil: no bar
	name  string
	last  time.Time
	shown bool
}

// newProgress returns a bar drawing on stderr if stderr is a terminal.
func newProgress(stderr io.Writer) *progress {
	f, ok := stderr.(*os.File)
	if !ok {
		return &progress{}
	}
	st, err := f.Stat()
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return &progress{}
	}
	return &progress{w: stderr}
}

// forCapture returns the progress callback for one capture (nil when no
// bar is drawn).
func (p *progress) forCapture(path string) func(read, total int64) {
	if p.w == nil {
		return nil
	}
	p.name, p.last, p.shown = filepath.Base(path), time.Time{}, false
	return p.update
}

const barWidth = 30

func (p *progress) update(read, total int64) {
	now := time.Now()
	if now.Sub(p.last) < 100*time.Millisecond || total <= 0 {
		return
	}
	p.last = now
	frac := float64(read) / float64(total)
	frac = min(max(frac, 0), 1)
	n := int(frac * barWidth)
	fmt.Fprintf(p.w, "\r%s [%s%s] %3.0f%%  %.1f/%.1f MB", p.name, strings.Repeat("#", n), strings.Repeat("-", barWidth-n),
		frac*100, float64(read)/1e6, float64(total)/1e6)
	p.shown = true
}

// done erases the bar.
func (p *progress) done() {
	if p.w != nil && p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}
