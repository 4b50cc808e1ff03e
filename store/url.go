package store

import (
	"fmt"
	"strings"
)

// ParseWorkspaceURL splits the URL of a workspace in a store,
// s3://BUCKET/PREFIX/NAME[@CKPT], into the store's URL (s3://BUCKET/PREFIX),
// the workspace's name and the checkpoint ("" for the newest).
func ParseWorkspaceURL(raw string) (storeURL, name, ckpt string, err error) {
	bucket, prefix, err := ParseURL(raw)
	if err != nil {
		return "", "", "", err
	}
	i := strings.LastIndexByte(prefix, '/')
	last := prefix[i+1:]
	if last == "" {
		return "", "", "", fmt.Errorf("store %q: %w: no workspace name, want s3://BUCKET/PREFIX/NAME[@CHECKPOINT]", raw, ErrBadURL)
	}
	name, ckpt, _ = strings.Cut(last, "@")
	if err := validName(name); err != nil {
		return "", "", "", fmt.Errorf("store %q: %w: %v", raw, ErrBadURL, err)
	}
	storeURL = "s3://" + bucket
	if i > 0 {
		storeURL += "/" + prefix[:i]
	}
	return storeURL, name, ckpt, nil
}
