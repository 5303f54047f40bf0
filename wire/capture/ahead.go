package capture

import (
	"io"
	"sync"
)

// aheadLen is the size of the chunks an aheadReader reads ahead, and
// aheadChunks how many it may hold ready.
const (
	aheadLen    = 256 << 10
	aheadChunks = 4
)

// aheadReader reads an io.Reader on a goroutine of its own, a few chunks
// ahead of its caller: a gzip stream is then decompressed on one core
// while frames are parsed and decoded on another. It returns the same
// bytes, and the same error at the same place, as reading r directly.
type aheadReader struct {
	ready chan aheadChunk
	free  chan []byte
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
	cur   []byte // what is left of the chunk being read
	buf   []byte // that chunk's buffer, recycled once read
	err   error  // the error after cur (sticky)
}

type aheadChunk struct {
	b   []byte
	err error
}

func newAheadReader(r io.Reader) *aheadReader {
	a := &aheadReader{ready: make(chan aheadChunk, aheadChunks), free: make(chan []byte, aheadChunks+2),
		stop: make(chan struct{}), done: make(chan struct{})}
	go a.run(r)
	return a
}

// run reads r into chunks until an error (io.EOF included) or stop.
func (a *aheadReader) run(r io.Reader) {
	defer close(a.done)
	for {
		var b []byte
		select {
		case b = <-a.free:
		default:
			b = make([]byte, aheadLen)
		}
		n := 0
		var err error
		for n < len(b) && err == nil {
			var k int
			k, err = r.Read(b[n:])
			n += k
		}
		select {
		case a.ready <- aheadChunk{b[:n], err}:
		case <-a.stop:
			return
		}
		if err != nil {
			return
		}
	}
}

func (a *aheadReader) Read(p []byte) (int, error) {
	for len(a.cur) == 0 {
		if a.err != nil {
			return 0, a.err
		}
		if a.buf != nil {
			select {
			case a.free <- a.buf[:cap(a.buf)]:
			default:
			}
			a.buf = nil
		}
		c := <-a.ready
		a.cur, a.buf, a.err = c.b, c.b, c.err
	}
	n := copy(p, a.cur)
	a.cur = a.cur[n:]
	return n, nil
}

// Close stops the goroutine and waits for it; r is not read afterwards.
func (a *aheadReader) Close() {
	a.once.Do(func() {
		close(a.stop)
		<-a.done
	})
}
