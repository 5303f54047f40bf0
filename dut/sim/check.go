package sim

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// Check runs a simulator through the protocol's steps, as a simulator's
// author does before running the suite (`rcconform sim-check`): hello,
// a QP with memory and receive WQEs, simulated time passing with nothing
// sent, a SEND the device must acknowledge, and, as its capabilities say,
// a SEND posted on the device, its completion, the QP's state and its
// memory. Every answer's framing and time are checked as the adapter
// checks them in a suite run (no answer within timeout of wall-clock
// time, time going backwards, a frame that is not RoCEv2). It writes one
// line per step to w and returns how many failed; a step that fails
// because the simulator broke the protocol ends the check.
func Check(command string, timeout time.Duration, w io.Writer) (failed int) {
	ck := &checker{w: w}
	defer ck.finish(&failed)
	var s *Sim
	ck.step("hello", func() string {
		d, err := New(dut.Options{Seed: 1, Settings: map[string]string{SetSim: command, SetTimeout: timeout.String()}})
		if err != nil {
			panic(err)
		}
		s = d.(*Sim)
		return fmt.Sprintf("device %q (%s) at %v, path MTU up to %d, capabilities %+v", s.dev.Name, s.dev.Agent, s.device, s.dev.MTU, s.caps)
	})
	if s == nil {
		return
	}
	defer s.Close()
	var c *Conn
	const expected, devicePSN = wire.PSN(100), wire.PSN(5000)
	ck.step("create_qp, reg_mr, post_recv", func() string {
		conn, err := s.NewConn(dut.ConnConfig{MTU: 1024, ExpectedPSN: expected, DevicePSN: devicePSN, SetPSNs: true})
		if err != nil {
			panic(err)
		}
		c = conn.(*Conn)
		return fmt.Sprintf("QP 0x%x, memory region R_Key 0x%x at 0x%x (%d bytes)", c.deviceQPN, c.mr.RKey, c.mr.Addr, c.mr.Length)
	})
	if c == nil {
		return
	}
	ck.step("advance with nothing sent", func() string {
		before := c.Now()
		c.Wait(10 * time.Microsecond)
		if got := c.Now() - before; got != 10*time.Microsecond {
			panic(fmt.Errorf("10 µs of simulated time asked for, %v passed", got))
		}
		if rec, ok := c.Recv(0); ok {
			panic(fmt.Errorf("the device sent %v unprompted", rec.Packet))
		}
		return "10 µs passed, nothing emitted"
	})
	ck.step("frame: a SEND Only with AckReq, answered by an ACK", func() string {
		sent := c.Now()
		err := c.Send(&wire.Packet{BTH: wire.BTH{Opcode: wire.SendOnly, PSN: expected, AckReq: true}, Payload: bytes.Repeat([]byte{0xA5}, 64)})
		if err != nil {
			panic(err)
		}
		rec := recvWithin(c, time.Millisecond, "an ACK of PSN 100 within 1 ms of simulated time (check the QP's DestQP, the addresses, the P_Key and the ICRC the model takes)")
		if rec.Packet.Opcode != wire.Acknowledge || !rec.Packet.AETH.IsACK() || rec.Packet.PSN != expected {
			panic(fmt.Errorf("an ACK of PSN %d wanted, the device sent %v", expected, rec.Packet))
		}
		if rec.ICRC != wire.ICRCOK {
			panic(fmt.Errorf("the ACK's ICRC is %v", rec.ICRC))
		}
		return fmt.Sprintf("ACK of PSN %d emitted %v after the SEND left the harness (the wire takes %v each way)", rec.Packet.PSN, rec.Time-sent, s.lat)
	})
	if s.caps.PostWR {
		ck.step("post_send: a SEND from the device", func() string {
			if err := c.PostSend(dut.WR{ID: 7, Op: dut.OpSend, Data: []byte("rcconform sim-check")}); err != nil {
				panic(err)
			}
			rec := recvWithin(c, time.Millisecond, "the posted SEND on the wire within 1 ms of simulated time")
			if rec.Packet.Opcode != wire.SendOnly || rec.Packet.PSN != devicePSN {
				panic(fmt.Errorf("a SEND Only with PSN %d wanted, the device sent %v", devicePSN, rec.Packet))
			}
			acked := c.Now()
			if err := c.Send(&wire.Packet{BTH: wire.BTH{Opcode: wire.Acknowledge, PSN: devicePSN}, AETH: wire.AETH{Syndrome: wire.SynACK(wire.CreditInvalid), MSN: 1}}); err != nil {
				panic(err)
			}
			if !s.caps.Completions {
				return fmt.Sprintf("SEND Only PSN %d; acknowledged (no poll_cq capability to see its completion)", rec.Packet.PSN)
			}
			for c.Now()-acked < time.Millisecond {
				cs, err := c.Completions()
				if err != nil {
					panic(err)
				}
				for _, cq := range cs {
					if cq.ID == 7 && !cq.Recv {
						if cq.Status != dut.StatusSuccess {
							panic(fmt.Errorf("work request 7 completed with %v", cq.Status))
						}
						return fmt.Sprintf("SEND Only PSN %d; completed successfully %v after the ACK left the harness", rec.Packet.PSN, cq.Time-acked)
					}
				}
				c.Wait(time.Microsecond)
			}
			panic(errors.New("no completion of work request 7 within 1 ms of simulated time after its ACK"))
		})
	}
	if s.caps.Completions {
		ck.step("query_qp", func() string {
			st, err := c.State()
			if err != nil {
				panic(err)
			}
			if st != dut.StateRTS {
				panic(fmt.Errorf("the QP is in %v, not RTS", st))
			}
			return "RTS"
		})
	}
	if s.caps.Memory {
		ck.step("write_mem, read_mem", func() string {
			want := []byte{1, 2, 3, 4, 5, 6, 7, 8}
			if err := c.WriteMemory(64, want); err != nil {
				panic(err)
			}
			got, err := c.ReadMemory(64, len(want))
			if err != nil {
				panic(err)
			}
			if !bytes.Equal(got, want) {
				panic(fmt.Errorf("wrote % x, read back % x", want, got))
			}
			return "8 bytes written and read back"
		})
	}
	ck.step("destroy_qp", func() string {
		if err := c.Close(); err != nil {
			panic(err)
		}
		return fmt.Sprintf("the simulator is at %v of simulated time", s.c.Now())
	})
	return
}

// recvWithin returns the next frame the device sends within d, or
// panics with want.
func recvWithin(c *Conn, d time.Duration, want string) *trace.Record {
	rec, ok := c.Recv(d)
	if !ok {
		panic(errors.New("no frame came: wanted " + want))
	}
	return rec
}

type checker struct {
	w      io.Writer
	failed int
	over   bool // the simulator broke the protocol: no step after it runs
}

// step runs fn, which returns what it saw or panics with what went wrong.
func (ck *checker) step(name string, fn func() string) {
	if ck.over {
		return
	}
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		err, ok := r.(error)
		if !ok {
			panic(r)
		}
		ck.failed++
		fmt.Fprintf(ck.w, "FAIL %s: %v\n", name, err)
		if errors.Is(err, dut.ErrBroken) || name == "hello" {
			ck.over = true
		}
	}()
	fmt.Fprintf(ck.w, "ok   %s: %s\n", name, fn())
}

func (ck *checker) finish(failed *int) {
	*failed = ck.failed
	if ck.failed == 0 {
		fmt.Fprintln(ck.w, "the simulator speaks the protocol; run the suite: go tool ginkgo run ./rules -- --dut=sim --sim='COMMAND'")
	}
}
