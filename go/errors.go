package ferrotorch

/*
#include "ferrotorch.h"
*/
import "C"

import (
	"fmt"
	"runtime"
)

// Status is the class of a failure, as the C ABI reports it (FT_ERROR_*).
type Status int32

// The statuses, matching ferrotorch.h.
const (
	StatusRuntime        Status = 1
	StatusIndex          Status = 2
	StatusValue          Status = 3
	StatusType           Status = 4
	StatusNotImplemented Status = 5
	StatusIO             Status = 6
	StatusKey            Status = 7
	StatusAssertion      Status = 8
	StatusNullHandle     Status = 9
	StatusInvalidHandle  Status = 10
	StatusInternal       Status = 11
)

var statusNames = map[Status]string{
	StatusRuntime: "RuntimeError", StatusIndex: "IndexError", StatusValue: "ValueError",
	StatusType: "TypeError", StatusNotImplemented: "NotImplementedError", StatusIO: "IOError",
	StatusKey: "KeyError", StatusAssertion: "AssertionError", StatusNullHandle: "NullHandleError",
	StatusInvalidHandle: "InvalidHandleError", StatusInternal: "InternalError",
}

// Error is a failed ferrotorch call: its class and ferrotorch's message,
// which names the op, the shapes and the dtypes.
type Error struct {
	Status  Status
	Message string
}

func (e *Error) Error() string {
	name, ok := statusNames[e.Status]
	if !ok {
		name = fmt.Sprintf("status %d", int(e.Status))
	}
	return name + ": " + e.Message
}

// Note [Errors across cgo]: the C ABI keeps the last error per OS thread,
// and a goroutine may move to another thread between two cgo calls, so
// every call that can fail runs with the goroutine locked to its thread
// (cheap: no system call) until its message is read. See lastError.

// lastError turns a non-OK status into an *Error; call it while still
// locked to the thread that made the failing call.
func lastError(s C.FtStatus) error {
	if s == 0 {
		return nil
	}
	return &Error{Status: Status(s), Message: C.GoString(C.ft_last_error())}
}

// call runs one C call that returns a status, locked to its thread
// (Note [Errors across cgo]).
func call(f func() C.FtStatus) error {
	runtime.LockOSThread()
	err := lastError(f())
	runtime.UnlockOSThread()
	return err
}

// CallC runs f, a call into the C ABI from another package that returns
// its FtStatus, on one OS thread, and turns a failure into an *Error with
// the C ABI's message (Note [Errors across cgo]).
func CallC(f func() int32) error {
	return call(func() C.FtStatus { return C.FtStatus(f()) })
}

// must panics on an error (the Must... variants).
func must(err error) {
	if err != nil {
		panic(err)
	}
}
