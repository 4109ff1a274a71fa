//go:build race

package syncs

const enabled = true
