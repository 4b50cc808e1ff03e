// Package semsearchtest serves an OpenAI-compatible embeddings endpoint on
// loopback for tests: deterministic vectors (a hashed bag of words, so
// texts that share words are near), and counts of what was asked.
package semsearchtest

import (
	"encoding/json"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unicode"
)

// Dim is the length of the vectors served.
const Dim = 256

// Server is an embeddings endpoint at URL (without /v1).
type Server struct {
	URL string
	// Requests and Inputs count the embeddings calls and the texts
	// embedded.
	Requests, Inputs atomic.Int64
	// Status, when not 0, is the status every call answers (a failing
	// endpoint).
	Status atomic.Int32

	mu     sync.Mutex
	texts  []string
	auth   []string
	models []string
}

// Start serves an endpoint until the test ends.
func Start(t testing.TB) *Server {
	s := &Server{}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// Texts are the inputs embedded so far, in order of arrival.
func (s *Server) Texts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.texts...)
}

// Auth are the Authorization headers of the calls.
func (s *Server) Auth() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.auth...)
}

// Models are the models the calls named.
func (s *Server) Models() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.models...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
		http.Error(w, `{"error":"not found"}`, http.StatusNotFound)
		return
	}
	if st := s.Status.Load(); st != 0 {
		http.Error(w, `{"error":{"message":"model not loaded"}}`, int(st))
		return
	}
	var req struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.Requests.Add(1)
	s.Inputs.Add(int64(len(req.Input)))
	s.mu.Lock()
	s.texts = append(s.texts, req.Input...)
	s.auth = append(s.auth, r.Header.Get("Authorization"))
	s.models = append(s.models, req.Model)
	s.mu.Unlock()
	type item struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	out := struct {
		Object string `json:"object"`
		Data   []item `json:"data"`
		Model  string `json:"model"`
	}{Object: "list", Model: req.Model}
	// Answered in reverse: the client must go by index.
	for i := len(req.Input) - 1; i >= 0; i-- {
		out.Data = append(out.Data, item{Object: "embedding", Index: i, Embedding: Embed(req.Input[i])})
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

// Embed is the vector served for text: each word (split at non-letters
// and at camelCase humps, lower-cased, a trailing "s" dropped) adds 1 at
// its hash's position.
func Embed(text string) []float32 {
	v := make([]float32, Dim)
	for _, w := range Words(text) {
		h := fnv.New32a()
		h.Write([]byte(w))
		v[h.Sum32()%Dim]++
	}
	return v
}

// Words splits text as Embed does.
func Words(text string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 1 {
			w := strings.ToLower(string(cur))
			if len(w) > 3 {
				w = strings.TrimSuffix(w, "s")
			}
			out = append(out, w)
		}
		cur = cur[:0]
	}
	var prev rune
	for _, r := range text {
		switch {
		case !unicode.IsLetter(r):
			flush()
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
		prev = r
	}
	flush()
	return out
}
