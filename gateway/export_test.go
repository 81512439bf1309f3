package gateway

import "time"

// SetCertRecheck makes the certificate files be looked at every d, until restore.
func SetCertRecheck(d time.Duration) (restore func()) {
	old := certRecheck
	certRecheck = d
	return func() { certRecheck = old }
}
