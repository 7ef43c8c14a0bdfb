package objdb

import (
	"fmt"
	"strconv"
	"strings"
)

func itoa(i int) string { return strconv.Itoa(i) }

// CheckKey rejects keys a store cannot hold under our layout: empty keys,
// keys with a leading slash, empty segments, or "." / ".." segments.
func CheckKey(key string) error {
	if key == "" {
		return fmt.Errorf("%w: empty key", ErrInvalid)
	}
	if strings.HasPrefix(key, "/") {
		return fmt.Errorf("%w: key %q must be relative to the root", ErrInvalid, key)
	}
	for _, seg := range strings.Split(strings.TrimSuffix(key, "/"), "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("%w: key %q has an empty or dot segment", ErrInvalid, key)
		}
	}
	return nil
}

// CheckServiceInfo rejects a ServiceInfo that cannot form a key.
func CheckServiceInfo(info ServiceInfo) error {
	switch {
	case info.ServiceName == "" || strings.ContainsAny(info.ServiceName, "/"):
		return fmt.Errorf("%w: service name %q", ErrInvalid, info.ServiceName)
	case info.HostAddr == "" || strings.Contains(info.HostAddr, "/"):
		return fmt.Errorf("%w: service %q host address %q", ErrInvalid, info.ServiceName, info.HostAddr)
	case info.Port < 0 || info.Port > 65535:
		return fmt.Errorf("%w: service %q port %d out of range 0-65535", ErrInvalid, info.ServiceName, info.Port)
	case info.TTL < 0:
		return fmt.Errorf("%w: service %q TTL %d is negative", ErrInvalid, info.ServiceName, info.TTL)
	}
	return nil
}
