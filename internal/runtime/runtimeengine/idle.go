package runtimeengine

import (
	"runtime/debug"
	"time"
)

// A runtime spends most of its life waiting for work. After a burst of
// tasks the Go heap keeps what the burst needed (the collector's goal is
// twice the live heap) and gives it back only slowly; once no task has run
// for IdleTrim, the runtime collects and returns that memory to the system
// at once, so an idle runtime stays small.

const defaultIdleTrim = 5 * time.Second

// armIdleTrim schedules a trim IdleTrim from now, replacing any scheduled
// one. Called with e.mu held.
func (e *Engine) armIdleTrim() {
	if e.cfg.IdleTrim < 0 {
		return
	}
	e.idleGen++
	gen := e.idleGen
	if e.idleTimer != nil {
		e.idleTimer.Stop()
	}
	e.idleTimer = time.AfterFunc(e.cfg.IdleTrim, func() { e.trimIfIdle(gen) })
}

// cancelIdleTrim drops the scheduled trim: a task started. Called with
// e.mu held.
func (e *Engine) cancelIdleTrim() {
	e.idleGen++
	if e.idleTimer != nil {
		e.idleTimer.Stop()
		e.idleTimer = nil
	}
}

// trimIfIdle trims when nothing ran since the trim of generation gen was
// scheduled.
func (e *Engine) trimIfIdle(gen uint64) {
	e.mu.Lock()
	idle := gen == e.idleGen && len(e.running) == 0
	e.mu.Unlock()
	if !idle {
		return
	}
	if e.cfg.trim != nil {
		e.cfg.trim()
		return
	}
	debug.FreeOSMemory()
}
