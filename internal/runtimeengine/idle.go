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
// one. Called with c.mu held.
func (c *Engine) armIdleTrim() {
	if c.cfg.IdleTrim < 0 {
		return
	}
	c.idleGen++
	gen := c.idleGen
	if c.idleTimer != nil {
		c.idleTimer.Stop()
	}
	c.idleTimer = time.AfterFunc(c.cfg.IdleTrim, func() { c.trimIfIdle(gen) })
}

// cancelIdleTrim drops the scheduled trim: a task started. Called with
// c.mu held.
func (c *Engine) cancelIdleTrim() {
	c.idleGen++
	if c.idleTimer != nil {
		c.idleTimer.Stop()
		c.idleTimer = nil
	}
}

// trimIfIdle trims when nothing ran since the trim of generation gen was
// scheduled.
func (c *Engine) trimIfIdle(gen uint64) {
	c.mu.Lock()
	idle := gen == c.idleGen && len(c.running) == 0
	c.mu.Unlock()
	if !idle {
		return
	}
	if c.cfg.trim != nil {
		c.cfg.trim()
		return
	}
	debug.FreeOSMemory()
}
