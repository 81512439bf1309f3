package redisstore

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// storeMetrics are the store's own Prometheus metrics: the latency of every Redis operation
// and its failures by kind. A Store is a prometheus.Collector; the gateway registers it.
type storeMetrics struct {
	latency *prometheus.HistogramVec
	errors  *prometheus.CounterVec
}

func newStoreMetrics(mode string) *storeMetrics {
	labels := prometheus.Labels{"mode": mode}
	return &storeMetrics{
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:        "codemode_runstore_op_duration_seconds",
			Help:        "Latency of run store operations on Redis (one script or pipeline each), by operation.",
			Buckets:     []float64{.0002, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 3},
			ConstLabels: labels,
		}, []string{"op"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "codemode_runstore_errors_total",
			Help:        "Run store operations that failed in Redis, by operation and kind (unreachable, full, readonly, error).",
			ConstLabels: labels,
		}, []string{"op", "kind"}),
	}
}

func (m *storeMetrics) observe(op string, d time.Duration, kind string) {
	if m == nil {
		return
	}
	m.latency.WithLabelValues(op).Observe(d.Seconds())
	if kind != "" {
		m.errors.WithLabelValues(op, kind).Inc()
	}
}

// Describe implements prometheus.Collector.
func (s *Store) Describe(ch chan<- *prometheus.Desc) {
	s.met.latency.Describe(ch)
	s.met.errors.Describe(ch)
}

// Collect implements prometheus.Collector.
func (s *Store) Collect(ch chan<- prometheus.Metric) {
	s.met.latency.Collect(ch)
	s.met.errors.Collect(ch)
}
