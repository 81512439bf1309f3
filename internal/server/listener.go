package server

import (
	"net"
	"sync"
	"sync/atomic"
)

// Connections are a bounded resource (issue 18 item 2). LimitListener caps the TCP connections
// open at once, in all and per client IP address, before any byte of a request is read: a
// connection past a cap is closed as soon as it is accepted, which costs the server one accept
// and one close, and never a file descriptor held for a slow client. The read deadlines and the
// idle timeout (http.Server, and the body deadline of mcpEndpoint) bound how long an admitted
// connection can sit without progress.

// LimitListener returns ln with at most max connections open at once, and at most perClient
// from one IP address (0: no per-address cap). Stats reports what it refused.
func LimitListener(ln net.Listener, max, perClient int) *CappedListener {
	return &CappedListener{Listener: ln, max: max, perClient: perClient, byIP: map[string]int{}}
}

// CappedListener is a net.Listener with connection caps (LimitListener).
type CappedListener struct {
	net.Listener
	max, perClient int

	mu    sync.Mutex
	open  int
	byIP  map[string]int
	refus atomic.Uint64
}

// Accept returns the next connection within the caps, closing those beyond them.
func (l *CappedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := remoteIP(c)
		l.mu.Lock()
		if l.open >= l.max || (l.perClient > 0 && l.byIP[ip] >= l.perClient) {
			l.mu.Unlock()
			l.refus.Add(1)
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetLinger(0) // a reset: no TIME_WAIT kept for a refused connection
			}
			_ = c.Close()
			continue
		}
		l.open++
		l.byIP[ip]++
		l.mu.Unlock()
		return &cappedConn{Conn: c, l: l, ip: ip}, nil
	}
}

// Stats reports the connections open now and those refused so far.
func (l *CappedListener) Stats() (open int, refused uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open, l.refus.Load()
}

func (l *CappedListener) release(ip string) {
	l.mu.Lock()
	l.open--
	if l.byIP[ip]--; l.byIP[ip] <= 0 {
		delete(l.byIP, ip)
	}
	l.mu.Unlock()
}

func remoteIP(c net.Conn) string {
	addr := c.RemoteAddr()
	if ta, ok := addr.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	return host
}

type cappedConn struct {
	net.Conn
	l    *CappedListener
	ip   string
	once sync.Once
}

func (c *cappedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.ip) })
	return err
}
