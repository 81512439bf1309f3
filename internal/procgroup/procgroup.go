// Package procgroup kills a command together with everything it started. A shell or a client
// tool program may start children that keep running (and keep its output pipes open) after the
// program itself is killed; starting the program as the leader of a new process group and
// killing the group on cancellation takes them all down.
package procgroup
