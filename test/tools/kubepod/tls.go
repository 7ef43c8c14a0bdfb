package main

import "crypto/tls"

// insecureTLS is the client TLS of check's URLs: the test API server's
// certificate is self-signed, and only the path is checked.
func insecureTLS() *tls.Config {
	return &tls.Config{InsecureSkipVerify: true} // test-only: path check against a self-signed server
}
