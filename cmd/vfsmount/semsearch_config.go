package main

import (
	"net/url"
	"os"
	"path/filepath"
	"regexp"

	"github.com/vfsmount/vfsmount/agentbridge/semsearch"
)

// configSemsearch is the semsearch: section of the config file: the
// embeddings endpoint that makes the tool face offer semSearch. Without
// the section the tool is not offered.
//
//	semsearch:
//	  endpoint: http://localhost:11434   # OpenAI-compatible (POST /v1/embeddings); with or without /v1
//	  model: nomic-embed-text            # the embedding model
//	  api_key_env: OPENAI_API_KEY        # optional: the environment variable holding the API key
//	  cache: /var/cache/vfsmount         # optional: default --cache-dir, else $XDG_CACHE_HOME/vfsmount
type configSemsearch struct {
	Endpoint  string `yaml:"endpoint"`
	Model     string `yaml:"model"`
	APIKeyEnv string `yaml:"api_key_env"`
	Cache     string `yaml:"cache"`
	// APIKey is refused: a key is never written in the config.
	APIKey string `yaml:"api_key"`
}

// semsearchSettings are the validated semsearch settings.
type semsearchSettings struct {
	Endpoint string
	Model    string
	// APIKeyEnv names the variable holding the key ("" for none); it is
	// read when the engine is made.
	APIKeyEnv string
	// Cache is the cache directory ("": the git mounts' one, see
	// engine).
	Cache string
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// loadSemsearchConfig validates the semsearch: section of file (nil:
// none, and no semSearch tool). Every error is a usage error naming the
// key.
func loadSemsearchConfig(file *configFile) (*semsearchSettings, error) {
	if file == nil || file.Semsearch == nil {
		return nil, nil
	}
	c := file.Semsearch
	if c.APIKey != "" {
		return nil, usageErrorf("config: semsearch.api_key: a key is not written in the config; put it in an environment variable and name that in semsearch.api_key_env")
	}
	if c.Endpoint == "" {
		return nil, usageErrorf("config: semsearch.endpoint: required: the base URL of an OpenAI-compatible embeddings API (http://localhost:11434 for Ollama, https://api.openai.com/v1)")
	}
	u, err := url.Parse(c.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usageErrorf("config: semsearch.endpoint: %q is not an http:// or https:// URL", c.Endpoint)
	}
	if u.User != nil {
		return nil, usageErrorf("config: semsearch.endpoint: %q has credentials in it; name the variable holding the key in semsearch.api_key_env", u.Redacted())
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, usageErrorf("config: semsearch.endpoint: %q has a query or fragment; give the base URL", c.Endpoint)
	}
	if c.Model == "" {
		return nil, usageErrorf("config: semsearch.model: required: the embedding model's name (nomic-embed-text, text-embedding-3-small)")
	}
	s := &semsearchSettings{Endpoint: c.Endpoint, Model: c.Model, APIKeyEnv: c.APIKeyEnv, Cache: c.Cache}
	if c.APIKeyEnv != "" && !envName.MatchString(c.APIKeyEnv) {
		return nil, usageErrorf("config: semsearch.api_key_env: %q is not an environment variable name", c.APIKeyEnv)
	}
	if s.Cache != "" && !filepath.IsAbs(s.Cache) {
		s.Cache = filepath.Join(file.baseDir, s.Cache)
	}
	return s, nil
}

// engine makes the semSearch engine of s; gitCache is --cache-dir. The
// API key is read from its variable now: one named but unset or empty is
// a usage error.
func (s *semsearchSettings) engine(gitCache string) (*semsearch.Engine, error) {
	var key string
	if s.APIKeyEnv != "" {
		key = os.Getenv(s.APIKeyEnv)
		if key == "" {
			return nil, usageErrorf("config: semsearch.api_key_env: $%s is not set", s.APIKeyEnv)
		}
	}
	dir := s.Cache
	if dir == "" {
		dir = gitCache
	}
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return nil, usageErrorf("config: semsearch.cache: no cache directory (%v); set semsearch.cache or --cache-dir", err)
		}
		dir = filepath.Join(base, "vfsmount")
	}
	return semsearch.New(semsearch.Config{Endpoint: s.Endpoint, Model: s.Model, APIKey: key, CacheDir: dir})
}
