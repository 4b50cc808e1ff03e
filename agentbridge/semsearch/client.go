package semsearch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// client calls an OpenAI-compatible embeddings endpoint: POST
// {base}/embeddings with {"model", "input": [...]}, answered by
// {"data": [{"index", "embedding"}]}.
type client struct {
	url     string // the full URL of the embeddings call
	shown   string // the endpoint as configured, for messages
	model   string
	key     string
	http    *http.Client
	batch   int
	workers int
}

// embeddingsURL is the URL of the embeddings call of endpoint, a base URL
// with or without /v1 ("http://localhost:11434", "https://api.openai.com/v1");
// one that already ends in /embeddings is taken as it is.
func embeddingsURL(endpoint string) string {
	u := strings.TrimRight(endpoint, "/")
	switch {
	case strings.HasSuffix(u, "/embeddings"):
		return u
	case strings.HasSuffix(u, "/v1"):
		return u + "/embeddings"
	}
	return u + "/v1/embeddings"
}

type embedRequest struct {
	Model string   `json:"model"`
	Input []string `json:"input"`
}

type embedResponse struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
}

// maxInput bounds the text of one input: a chunk is at most 80 lines, but
// lines can be long, and embedding models take a few thousand tokens.
const maxInput = 8000

// embed returns the vectors of texts, in order: batches of c.batch
// inputs, c.workers requests at a time. done, when set, is told of each
// batch as it completes (first index, vectors), so a caller can keep what
// was embedded even when a later batch fails.
func (c *client) embed(ctx context.Context, texts []string, done func(first int, vs [][]float32) error) ([][]float32, error) {
	out := make([][]float32, len(texts))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type job struct{ first, end int }
	jobs := make(chan job)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
		cancel()
	}
	for range max(1, c.workers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				vs, err := c.call(ctx, texts[j.first:j.end])
				if err != nil {
					fail(err)
					continue
				}
				copy(out[j.first:j.end], vs)
				if done != nil {
					mu.Lock()
					err = done(j.first, vs)
					mu.Unlock()
					if err != nil {
						fail(err)
					}
				}
			}
		}()
	}
	step := max(1, c.batch)
feed:
	for i := 0; i < len(texts); i += step {
		select {
		case jobs <- job{i, min(len(texts), i+step)}:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// call makes one request.
func (c *client) call(ctx context.Context, texts []string) ([][]float32, error) {
	in := make([]string, len(texts))
	for i, t := range texts {
		if len(t) > maxInput {
			t = t[:maxInput]
		}
		if strings.TrimSpace(t) == "" {
			t = "(empty)" // some servers refuse an empty input
		}
		in[i] = t
	}
	body, err := json.Marshal(embedRequest{Model: c.model, Input: in})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("embeddings endpoint %s: %v", c.shown, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.Canceled) {
			return nil, fmt.Errorf("embeddings endpoint %s did not answer in time: %v", c.shown, ctx.Err())
		}
		var ue interface{ Timeout() bool }
		if errors.As(err, &ue) && ue.Timeout() {
			return nil, fmt.Errorf("embeddings endpoint %s did not answer in time", c.shown)
		}
		return nil, fmt.Errorf("embeddings endpoint %s is unreachable: %v", c.shown, rootCause(err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return nil, fmt.Errorf("embeddings endpoint %s: reading the answer: %v", c.shown, err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("embeddings endpoint %s answered %s: %s", c.shown, resp.Status, excerpt(data))
	}
	var r embedResponse
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("embeddings endpoint %s: the answer is not an embeddings response: %v", c.shown, err)
	}
	out := make([][]float32, len(texts))
	for _, d := range r.Data {
		if d.Index < 0 || d.Index >= len(out) {
			return nil, fmt.Errorf("embeddings endpoint %s: the answer has an embedding for input %d of %d", c.shown, d.Index, len(out))
		}
		out[d.Index] = d.Embedding
	}
	for i, v := range out {
		if len(v) == 0 {
			return nil, fmt.Errorf("embeddings endpoint %s: the answer has no embedding for input %d of %d", c.shown, i, len(out))
		}
		if len(v) != len(out[0]) {
			return nil, fmt.Errorf("embeddings endpoint %s: embeddings of different lengths (%d and %d) in one answer", c.shown, len(out[0]), len(v))
		}
	}
	return out, nil
}

// rootCause is the innermost error of a failed request ("connection
// refused"), without the URL the message already names.
func rootCause(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}

// excerpt is the start of an error body, on one line.
func excerpt(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	if s == "" {
		s = "(no body)"
	}
	return s
}

// defaultTimeout bounds one request to the endpoint.
const defaultTimeout = 60 * time.Second
