// Package tcplink runs a TCP link on loopback between two programs: a
// proxy that can add a delay to every byte, as a link between distant
// regions does, and be cut, as a network partition does. Tests
// (clustertest) and the bench (regions) put them between NATS servers.
package tcplink

import (
	"net"
	"sync"
	"time"
)

// Link carries the connections from one server to another through a
// loopback listener, so a test can cut the two apart while both keep
// serving their clients, or slow them down. While cut, bytes are read and
// dropped (the servers see a silent peer, not a closed connection, as in a
// network partition) and new connections are refused. With a delay, every
// byte arrives that much later in each direction, as over a long-distance
// link; the bandwidth stays that of loopback.
type Link struct {
	ln net.Listener

	mu     sync.Mutex
	target string
	cut    bool
	delay  time.Duration
	conns  map[net.Conn]bool
}

// New starts a link with no target yet; connections are refused until
// SetTarget.
func New() (*Link, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	l := &Link{ln: ln, conns: map[net.Conn]bool{}}
	go l.accept()
	return l, nil
}

// Addr is the address to connect to instead of the target.
func (l *Link) Addr() string { return l.ln.Addr().String() }

// SetTarget sets where new connections are carried (host:port).
func (l *Link) SetTarget(addr string) {
	l.mu.Lock()
	l.target = addr
	l.mu.Unlock()
}

// SetDelay sets the delay added to each direction of the link's
// connections, open ones included.
func (l *Link) SetDelay(d time.Duration) {
	l.mu.Lock()
	l.delay = d
	l.mu.Unlock()
}

func (l *Link) accept() {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		go l.pipe(c)
	}
}

func (l *Link) pipe(c net.Conn) {
	l.mu.Lock()
	target, cut := l.target, l.cut
	l.mu.Unlock()
	if cut || target == "" {
		_ = c.Close()
		return
	}
	u, err := net.Dial("tcp", target)
	if err != nil {
		_ = c.Close()
		return
	}
	l.mu.Lock()
	l.conns[c], l.conns[u] = true, true
	l.mu.Unlock()
	go l.copy(u, c)
	go l.copy(c, u)
}

// chunk is what one read returned, and when it is to be written.
type chunk struct {
	due  time.Time
	data []byte
}

// copy forwards src to dst until either closes, dropping what it reads while
// the link is cut. Reads and delayed writes run apart, so a delay adds
// latency without throttling the connection.
func (l *Link) copy(dst, src net.Conn) {
	out := make(chan chunk, 4096)
	defer func() {
		close(out)
		_ = src.Close()
	}()
	go l.write(dst, src, out)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			l.mu.Lock()
			cut, delay := l.cut, l.delay
			l.mu.Unlock()
			if !cut {
				out <- chunk{due: time.Now().Add(delay), data: append([]byte(nil), buf[:n]...)}
			}
		}
		if err != nil {
			return
		}
	}
}

// write writes each chunk to dst once it is due, in order.
func (l *Link) write(dst, src net.Conn, in <-chan chunk) {
	defer func() {
		_ = dst.Close()
		_ = src.Close()
		l.mu.Lock()
		delete(l.conns, dst)
		delete(l.conns, src)
		l.mu.Unlock()
	}()
	for c := range in {
		if wait := time.Until(c.due); wait > 0 {
			// The simulated distance, not a wait for an event.
			time.Sleep(wait)
		}
		if _, err := dst.Write(c.data); err != nil {
			// Drain so the reader never blocks on a dead writer.
			_ = src.Close()
			for range in {
			}
			return
		}
	}
}

// SetCut cuts or heals the link. Healing closes the connections that were
// cut (their streams lost bytes), so the servers connect again cleanly.
func (l *Link) SetCut(cut bool) {
	l.mu.Lock()
	was := l.cut
	l.cut = cut
	var stale []net.Conn
	if was && !cut {
		for c := range l.conns {
			stale = append(stale, c)
		}
	}
	l.mu.Unlock()
	for _, c := range stale {
		_ = c.Close()
	}
}

// Close stops the link and closes its connections.
func (l *Link) Close() {
	_ = l.ln.Close()
	l.DropAll()
}

// DropAll closes every connection the link carries.
func (l *Link) DropAll() {
	l.mu.Lock()
	var all []net.Conn
	for c := range l.conns {
		all = append(all, c)
	}
	l.mu.Unlock()
	for _, c := range all {
		_ = c.Close()
	}
}
