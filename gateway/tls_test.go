package gateway_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/gateway"
)

// selfSigned is a certificate for 127.0.0.1 (named cn) and the pool that trusts it.
func selfSigned(t *testing.T, cn string) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// ListenTLS serves the guarded listener over HTTPS itself, for a library user without a TLS
// proxy (issue 24): the token is still required, an MCP client gets code mode, and plain HTTP to
// the port is refused.
func TestListenTLS(t *testing.T) {
	const token = "tls-token-0123456789abcdef"
	cfg := config.Default()
	cfg.Serve.HTTP.Token = token
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	g, err := gateway.Open(ctx, cfg, gateway.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if _, err := g.ListenTLS(ctx, "127.0.0.1:0", &tls.Config{}); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a tls.Config without a certificate: %v", err)
	}
	cert, pool := selfSigned(t, "codemode test")
	l, err := g.ListenTLS(ctx, "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(l.URL(), "https://127.0.0.1:") {
		t.Fatalf("URL %s", l.URL())
	}
	served := make(chan error, 1)
	go func() { served <- l.Serve(ctx) }()

	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(strings.TrimSuffix(l.URL(), "/mcp") + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token over TLS: %d", resp.StatusCode)
	}
	client, err := mcp.NewClient(&mcp.Implementation{Name: "tls", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: l.URL(), HTTPClient: &http.Client{Transport: bearer{token, tr}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := client.CallTool(ctx, &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"code": "return 6 * 7"}})
	if err != nil || !strings.Contains(out.Content[0].(*mcp.TextContent).Text, `"value":42`) {
		t.Fatalf("exec over TLS: %v %+v", err, out)
	}
	_ = client.Close()

	plain, err := http.Get("http://" + l.Addr().String() + "/healthz")
	if err == nil {
		b, _ := io.ReadAll(plain.Body)
		plain.Body.Close()
		if plain.StatusCode != http.StatusBadRequest {
			t.Fatalf("plain HTTP to the TLS port: %d %s", plain.StatusCode, b)
		}
	}
	stop()
	if err := <-served; err != nil {
		t.Fatalf("drain: %v", err)
	}
}

// writePEM writes cert's chain and key where serve.http.tls reads them.
func writePEM(t *testing.T, cert tls.Certificate, certFile, keyFile string) {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// serve.http.tls: Listen serves HTTPS with the configured files and serves a renewed certificate
// without a restart; a renewal caught half written keeps the one served before.
func TestListenConfigTLS(t *testing.T) {
	defer gateway.SetCertRecheck(0)()
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	first, pool := selfSigned(t, "first")
	writePEM(t, first, certFile, keyFile)
	cfg := config.Default()
	cfg.Serve.HTTP.TLS = &config.ServeTLS{CertFile: certFile, KeyFile: keyFile}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	g, err := gateway.Open(ctx, cfg, gateway.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	l, err := g.Listen(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = l.Serve(ctx) }()
	served := func() string {
		t.Helper()
		conn, err := tls.Dial("tcp", l.Addr().String(), &tls.Config{InsecureSkipVerify: true}) // the name is what is checked
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	if cn := served(); cn != "first" {
		t.Fatalf("served %q", cn)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(strings.TrimSuffix(l.URL(), "/mcp") + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz over TLS: %v %v", err, resp)
	}
	resp.Body.Close()

	second, _ := selfSigned(t, "second")
	writePEM(t, second, certFile, keyFile)
	if cn := served(); cn != "second" {
		t.Fatalf("after renewal: served %q", cn)
	}
	third, _ := selfSigned(t, "third")
	writePEM(t, third, certFile, filepath.Join(dir, "elsewhere.key")) // the key is not there yet
	if cn := served(); cn != "second" {
		t.Fatalf("a half-written renewal: served %q", cn)
	}

	cfg.Serve.HTTP.TLS = &config.ServeTLS{CertFile: filepath.Join(dir, "missing.crt"), KeyFile: keyFile}
	g2, err := gateway.Open(ctx, cfg, gateway.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g2.Close()
	if _, err := g2.Listen(ctx, "127.0.0.1:0"); err == nil || !strings.Contains(err.Error(), "serve.http.tls") {
		t.Fatalf("a missing certificate: %v", err)
	}
}
