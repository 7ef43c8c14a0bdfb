package ctxutil

import (
	"time"

	"github.com/cenkalti/backoff/v5"
)

// BackoffJitter is the randomization every retry loop uses: ±20%, so
// clients that failed together do not retry together.
const BackoffJitter = 0.2

// NewBackoff returns the one exponential backoff used for retries and
// reconnects (docs/style.md, "one backoff"): the first delay is initial,
// each further one doubles up to max, all with ±20% jitter. It never stops
// on its own; the caller bounds the loop with its context or a budget and
// calls Reset after a success. Not safe for concurrent use.
func NewBackoff(initial, max time.Duration) *backoff.ExponentialBackOff {
	if max < initial {
		max = initial
	}
	return &backoff.ExponentialBackOff{
		InitialInterval:     initial,
		RandomizationFactor: BackoffJitter,
		Multiplier:          2,
		MaxInterval:         max,
	}
}
