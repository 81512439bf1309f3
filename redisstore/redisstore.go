// Package redisstore links the Redis backend of codemode.OpenRunStore: import it for its side
// effect in a program that opens a configuration's runStore.redis itself,
//
//	import _ "github.com/codemode-go/codemode/redisstore"
//
// so that programs without a shared run store do not carry a Redis client. The gateway package
// links it already.
package redisstore

import _ "github.com/codemode-go/codemode/internal/runstore/redisstore" // registers the opener
