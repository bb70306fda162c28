package main

import (
	"io"
	"testing"
)

func TestParseNoisyProduction(t *testing.T) {
	for _, c := range []struct {
		args    []string
		wantErr bool
	}{
		{[]string{"-noisy", "-noisy-production", "-noisy-scenarios", "hanging"}, false},
		{[]string{"-noisy-production"}, true}, // without -noisy it would be ignored
		{[]string{"-noisy", "-noisy-production", "-production"}, true},
	} {
		o, err := parseOptions(c.args, io.Discard)
		if got := err != nil; got != c.wantErr {
			t.Errorf("%q: got error %v, want one: %t", c.args, err, c.wantErr)
			continue
		}
		if err == nil && !o.noisyProduction {
			t.Errorf("%q: noisyProduction not set", c.args)
		}
	}
}
