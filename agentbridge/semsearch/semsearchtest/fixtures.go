package semsearchtest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/agentbridge/semsearch"
)

// The files the tests search: a Go file whose functions the queries "parse
// config file" and "retry after failed attempt" find by meaning, and a
// paragraph file that neither should.

// ConfigGo is a Go file with parseConfig and retryBackoff.
const ConfigGo = `package cfg

import "os"

// parseConfig reads the config file at path and parses it.
func parseConfig(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parse(string(data)), nil
}

// retryBackoff waits longer after each failed attempt.
func retryBackoff(attempt int) int {
	return attempt * attempt
}
`

// NotesMD is a Markdown file about a server.
const NotesMD = `# Notes

The server listens on a socket and answers requests.

Logging goes to standard error.
`

// Engine is an engine over the endpoint at url (a server of this
// package), model "test-embed", its vectors in cache.
func Engine(t testing.TB, url, cache string) *semsearch.Engine {
	t.Helper()
	e, err := semsearch.New(semsearch.Config{Endpoint: url, Model: "test-embed", CacheDir: cache})
	require.NoError(t, err)
	return e
}
