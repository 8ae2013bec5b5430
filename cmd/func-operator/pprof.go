package main

import (
	"net"
	"net/netip"
)

// loopbackOnly reports whether a listener bound to addr ("host:port"; "" or "0":
// none) is reachable from this host alone: a loopback address, or "localhost".
func loopbackOnly(addr string) bool {
	if addr == "" || addr == "0" {
		return true
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
