package redisstore

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/codemode-go/codemode/internal/runstore"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Modes of deployment, one client for each (go-redis's).
const (
	ModeStandalone = "standalone" // one Redis (or a proxy in front of one)
	ModeSentinel   = "sentinel"   // primaries and replicas managed by Redis Sentinel
	ModeCluster    = "cluster"    // Redis Cluster
)

// DefaultLease is how long a wait's hold on a run lasts without renewal: a replica that dies
// mid-wait frees its runs this long after its last renewal (runStore.redis.takeoverMs).
const DefaultLease = 5 * time.Second

// Options configure a Store. The configuration maps runStore.redis onto them.
type Options struct {
	// Mode is ModeStandalone (default), ModeSentinel or ModeCluster.
	Mode string
	// URL is redis://[user:password@]host:port/db, rediss:// for TLS, or unix://path
	// (standalone). Under Sentinel it names a sentinel (its user and password are the
	// sentinel's); under Cluster, a node.
	URL string
	// Addrs are more sentinels (Sentinel) or seed nodes (Cluster).
	Addrs []string
	// MasterName is the primary's name under Sentinel.
	MasterName string
	// Username and Password, when set, override the URL's (for the data nodes).
	Username, Password string
	// SentinelPassword, when set, authenticates to the sentinels.
	SentinelPassword string
	// TLS, when set, configures TLS (the URL must be rediss://): a CA file for the server's
	// certificate, a client certificate for Redis's tls-auth-clients.
	TLS *TLSFiles
	// Key is the 32-byte master key; every replica sharing the store needs the same one.
	Key [32]byte
	// Prefix starts every key (default DefaultPrefix).
	Prefix string
	// Limits bound the store, fleet-wide. Zero fields take runstore's defaults.
	Limits runstore.Limits
	// Timeout bounds each call (default DefaultTimeout), whatever the caller's context says.
	Timeout time.Duration
	// Lease is the takeover interval (default DefaultLease): accounting outlives a run's ttl
	// by this much, as a held run may.
	Lease time.Duration
}

// TLSFiles name the TLS material in files (PEM).
type TLSFiles struct {
	CAFile     string // CA certificates that sign the server's; "" uses the system's
	CertFile   string // client certificate, with KeyFile
	KeyFile    string
	ServerName string // expected name in the server's certificate; "" is the URL's host
}

func (t *TLSFiles) config(host string) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: host}
	if t == nil {
		return c, nil
	}
	if t.ServerName != "" {
		c.ServerName = t.ServerName
	}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("runStore.redis.tls.caFile: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("runStore.redis.tls.caFile: %s holds no PEM certificate", t.CAFile)
		}
		c.RootCAs = pool
	}
	if t.CertFile != "" || t.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("runStore.redis.tls: client certificate: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// cleanURLError drops the URL from a parse error: *url.Error quotes it whole, password included.
func cleanURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// New makes a store. It does not connect: the first call does (Ping checks the connection at
// startup). Errors never echo the URL's password.
func New(opts Options) (*Store, error) {
	if opts.Key == ([32]byte{}) {
		return nil, errors.New("runStore.redis: the run store key is missing (set the environment variable named by keyEnv)")
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	lease := opts.Lease
	if lease <= 0 {
		lease = DefaultLease
	}
	mode := opts.Mode
	if mode == "" {
		mode = ModeStandalone
	}
	rdb, err := newClient(mode, opts, timeout)
	if err != nil {
		return nil, err
	}
	keys, err := newKeyring(opts.Key)
	if err != nil {
		_ = rdb.Close()
		return nil, err
	}
	prefix := opts.Prefix
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return &Store{rdb: rdb, keys: keys, prefix: prefix, lim: opts.Limits.WithDefaults(), timeout: timeout,
		mode: mode, lease: lease, met: newStoreMetrics(mode)}, nil
}

func newClient(mode string, opts Options, timeout time.Duration) (redis.UniversalClient, error) {
	u, err := url.Parse(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("runStore.redis.url: %v", cleanURLError(err))
	}
	var tlsConf *tls.Config
	if opts.TLS != nil || u.Scheme == "rediss" {
		if u.Scheme != "rediss" {
			return nil, errors.New("runStore.redis.tls needs a rediss:// URL")
		}
		if tlsConf, err = opts.TLS.config(u.Hostname()); err != nil {
			return nil, err
		}
	}
	switch mode {
	case ModeStandalone:
		o, err := redis.ParseURL(opts.URL)
		if err != nil {
			return nil, fmt.Errorf("runStore.redis.url: %v", cleanURLError(err))
		}
		if opts.Username != "" {
			o.Username = opts.Username
		}
		if opts.Password != "" {
			o.Password = opts.Password
		}
		if tlsConf != nil {
			o.TLSConfig = tlsConf
		}
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolTimeout = timeout, timeout, timeout, timeout
		o.ContextTimeoutEnabled = true
		o.MaxRetries = -1
		o.DialerRetries = 1
		o.DisableIdentity = true
		o.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
		return redis.NewClient(o), nil
	case ModeSentinel:
		o, err := redis.ParseFailoverURL(opts.URL)
		if err != nil {
			return nil, fmt.Errorf("runStore.redis.url: %v", cleanURLError(err))
		}
		o.SentinelAddrs = append(o.SentinelAddrs, opts.Addrs...)
		if opts.MasterName != "" {
			o.MasterName = opts.MasterName
		}
		if o.MasterName == "" {
			return nil, errors.New("runStore.redis.masterName is required with mode \"sentinel\"")
		}
		if opts.SentinelPassword != "" {
			o.SentinelPassword = opts.SentinelPassword
		}
		o.Username, o.Password = opts.Username, opts.Password
		if tlsConf != nil {
			o.TLSConfig = tlsConf
		}
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolTimeout = timeout, timeout, timeout, timeout
		o.ContextTimeoutEnabled = true
		o.MaxRetries = -1
		o.DialerRetries = 1
		o.DisableIdentity = true
		return redis.NewFailoverClient(o), nil
	case ModeCluster:
		o, err := redis.ParseClusterURL(opts.URL)
		if err != nil {
			return nil, fmt.Errorf("runStore.redis.url: %v", cleanURLError(err))
		}
		o.Addrs = append(o.Addrs, opts.Addrs...)
		if opts.Username != "" {
			o.Username = opts.Username
		}
		if opts.Password != "" {
			o.Password = opts.Password
		}
		if tlsConf != nil {
			o.TLSConfig = tlsConf
		}
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolTimeout = timeout, timeout, timeout, timeout
		o.ContextTimeoutEnabled = true
		o.MaxRetries = -1 // MOVED, ASK and TRYAGAIN (a reshard) are still followed, up to MaxRedirects
		o.DialerRetries = 1
		o.DisableIdentity = true
		o.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
		return redis.NewClusterClient(o), nil
	}
	return nil, fmt.Errorf("runStore.redis.mode: unknown mode %q (standalone, sentinel or cluster)", mode)
}
