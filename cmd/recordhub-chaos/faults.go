package main

import (
	"context"
	"fmt"
	"syscall"
	"time"
)

// fault is one thing the harness breaks; do breaks it, brings it back and
// says what happened.
type fault struct {
	name string
	do   func(ctx context.Context) (string, error)
}

// faults is one cycle's faults, in turn; cycle picks which worker and
// which API replica they hit, so that cycles alternate.
func (s *stack) faults(o options, cycle int) []fault {
	killed := s.workers[cycle%len(s.workers)]
	frozen := s.workers[(cycle+1)%len(s.workers)]
	api := s.apis[cycle%len(s.apis)]
	return []fault{
		{"SIGKILL " + killed.name + ", then start it again", func(ctx context.Context) (string, error) {
			return killRestart(ctx, killed)
		}},
		{"SIGKILL " + api.name + ", then start it again", func(ctx context.Context) (string, error) {
			return killRestart(ctx, api)
		}},
		{"SIGKILL Temporal, then start it again", func(ctx context.Context) (string, error) {
			if err := s.temporal.Kill(); err != nil {
				return "", err
			}
			start := time.Now()
			if err := s.temporal.Restart(ctx); err != nil {
				return "", err
			}
			return fmt.Sprintf("serving its namespace again after %s", since(start)), nil
		}},
		{fmt.Sprintf("Redis down (SIGKILL) for %s, then started again (empty)", o.redisDown), func(ctx context.Context) (string, error) {
			if err := s.redis.kill(); err != nil {
				return "", err
			}
			if err := sleep(ctx, o.redisDown); err != nil {
				return "", err
			}
			return "back", s.redis.start(ctx)
		}},
		{fmt.Sprintf("SIGSTOP %s for %s, then SIGCONT", frozen.name, o.freeze), func(ctx context.Context) (string, error) {
			pid, err := frozen.signal(syscall.SIGSTOP)
			if err != nil {
				return "", err
			}
			err = sleep(ctx, o.freeze)
			// Thawed even when interrupted: a frozen process would not stop.
			if _, cerr := frozen.signal(syscall.SIGCONT); cerr != nil {
				return "", cerr
			}
			return fmt.Sprintf("pid %d thawed", pid), err
		}},
		{"PostgreSQL stop -m immediate, then start", func(ctx context.Context) (string, error) {
			if err := s.pg.crash(ctx); err != nil {
				return "", err
			}
			start := time.Now()
			if err := s.pg.start(ctx); err != nil {
				return "", err
			}
			return fmt.Sprintf("accepting connections again after %s (crash recovery included)", since(start)), nil
		}},
	}
}

func killRestart(ctx context.Context, svc *service) (string, error) {
	start := time.Now()
	oldPid, newPid, err := svc.killAndRestart(ctx)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("pid %d killed; pid %d answering /healthz after %s", oldPid, newPid, since(start)), nil
}

// runFaults waits o.warmUp, then runs o.cycles cycles of faults, each
// fault o.every after the previous one ended, and returns when the last one
// has ended.
func (s *stack) runFaults(ctx context.Context, o options, logf logFunc) error {
	if err := sleep(ctx, o.warmUp); err != nil {
		return err
	}
	for cycle := range o.cycles {
		for i, f := range s.faults(o, cycle) {
			if cycle > 0 || i > 0 {
				if err := sleep(ctx, o.every); err != nil {
					return err
				}
			}
			logf("fault %d.%d: %s ...", cycle+1, i+1, f.name)
			detail, err := f.do(ctx)
			if err != nil {
				return fmt.Errorf("fault %q: %w", f.name, err)
			}
			logf("fault %d.%d: done: %s", cycle+1, i+1, detail)
		}
	}
	return nil
}

// supervise restarts, as an orchestrator would, any service or the
// Temporal server that exits on its own, until ctx ends.
func (s *stack) supervise(ctx context.Context, logf logFunc) {
	for _, svc := range append(append([]*service(nil), s.apis...), s.workers...) {
		go func() {
			for sleep(ctx, 500*time.Millisecond) == nil {
				revived, why, err := svc.reviveIfDead(ctx)
				switch {
				case err != nil && ctx.Err() == nil:
					logf("supervisor: %s exited on its own (%s) and did not come back: %v", svc.name, why, err)
				case revived:
					logf("supervisor: %s exited on its own (%s); started again", svc.name, why)
				}
			}
		}()
	}
	go func() {
		for sleep(ctx, 500*time.Millisecond) == nil {
			if !s.temporal.Exited() {
				continue
			}
			logf("supervisor: Temporal exited on its own; starting it again")
			if err := s.temporal.Restart(ctx); err != nil && ctx.Err() == nil {
				logf("supervisor: Temporal did not come back: %v", err)
			}
		}
	}()
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func since(t time.Time) string { return time.Since(t).Round(10 * time.Millisecond).String() }
