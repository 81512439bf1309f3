package gateway

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/codemode-go/codemode/config"
)

// certFiles serves serve.http.tls's certificate, read again when either file changes (checked
// at most every certRecheck), so a renewed certificate needs no restart. A renewal caught half
// written (the pair does not match yet) keeps the certificate served before.
type certFiles struct {
	cfg config.ServeTLS

	mu      sync.Mutex
	cert    *tls.Certificate
	stamp   string // both files' size and modification time when cert was read
	checked time.Time
}

// certRecheck is how often a handshake may look at the files (a variable for tests).
var certRecheck = 10 * time.Second

func loadCertFiles(cfg config.ServeTLS) (*certFiles, error) {
	c := &certFiles{cfg: cfg}
	if err := c.reload(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *certFiles) stampNow() (string, error) {
	var s string
	for _, f := range []string{c.cfg.CertFile, c.cfg.KeyFile} {
		fi, err := os.Stat(f)
		if err != nil {
			return "", err
		}
		s += fmt.Sprintf("%d:%d;", fi.Size(), fi.ModTime().UnixNano())
	}
	return s, nil
}

// reload reads the pair when it changed since the last read (the caller holds mu or owns c).
func (c *certFiles) reload() error {
	stamp, err := c.stampNow()
	if err != nil {
		return fmt.Errorf("serve.http.tls: %w", err)
	}
	if stamp == c.stamp && c.cert != nil {
		return nil
	}
	cert, err := tls.LoadX509KeyPair(c.cfg.CertFile, c.cfg.KeyFile)
	if err != nil {
		return fmt.Errorf("serve.http.tls: %w", err)
	}
	c.cert, c.stamp = &cert, stamp
	return nil
}

func (c *certFiles) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.checked) >= certRecheck {
		c.checked = time.Now()
		_ = c.reload() // on failure the previous certificate stays
	}
	return c.cert, nil
}

// tlsConfig is the listener's TLS configuration for these files.
func (c *certFiles) tlsConfig() *tls.Config {
	return &tls.Config{GetCertificate: c.getCertificate, MinVersion: tls.VersionTLS12}
}
