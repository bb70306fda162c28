//go:build !noembedtemporal

package main
