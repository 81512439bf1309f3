package redistest

import (
	"net"
	"testing"
	"time"
)

func TestMain(m *testing.M) { Main(m) }

func answers(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	buf := make([]byte, 7)
	n, _ := c.Read(buf)
	return string(buf[:n]) == "+PONG\r\n"
}

func TestLifecycle(t *testing.T) {
	s := Start(t)
	if !answers(s.Addr()) {
		t.Fatal("a started server does not answer")
	}
	if sh := Shared(t); sh.Addr() == s.Addr() || !answers(sh.Addr()) || Shared(t) != sh {
		t.Fatal("the shared instance is not a separate, single server")
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if answers(s.Addr()) {
		t.Fatal("a stopped server answers")
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if !answers(s.Addr()) {
		t.Fatal("a restarted server does not answer")
	}
	s.Pause()
	if answers(s.Addr()) {
		t.Fatal("a paused server answers")
	}
	s.Resume()
	if !answers(s.Addr()) {
		t.Fatal("a resumed server does not answer")
	}
	if s.URL() != "redis://"+s.Addr()+"/0" {
		t.Fatal(s.URL())
	}
}

// A server on the port that is not ours is not mistaken for ours.
func TestPingChecksTheProcess(t *testing.T) {
	s := Start(t)
	if err := ping(s.Addr(), 1); err == nil {
		t.Fatal("ping accepted a server with another pid")
	}
}
