package codemode

import "time"

// SetHeartbeatForTest shortens the durable layer's heartbeats for tests in package
// codemode_test (two runtimes standing for two replicas); the returned function restores them.
func SetHeartbeatForTest(every, ttl time.Duration) (restore func()) {
	oldEvery, oldTTL := heartbeatEvery, heartbeatTTL
	heartbeatEvery, heartbeatTTL = every, ttl
	return func() { heartbeatEvery, heartbeatTTL = oldEvery, oldTTL }
}
