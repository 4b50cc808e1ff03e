package agentbridge

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts/memfs"
)

type fakeCheckpoints struct{ calls []string }

func (f *fakeCheckpoints) Create(ctx context.Context, name string) (string, error) {
	f.calls = append(f.calls, "create "+name)
	return "c1", nil
}
func (f *fakeCheckpoints) List(ctx context.Context) (string, error) { return "c1", nil }
func (f *fakeCheckpoints) Diff(ctx context.Context, from, to string, paths []string) (string, error) {
	f.calls = append(f.calls, "diff "+from+" "+to+" "+strings.Join(paths, ","))
	return "diff", nil
}
func (f *fakeCheckpoints) Restore(ctx context.Context, id string, paths []string) (string, error) {
	if id != "c1" {
		return "", errors.New(`checkpoint "` + id + `": no such checkpoint`)
	}
	f.calls = append(f.calls, "restore "+id)
	return "restored", nil
}
func (f *fakeCheckpoints) Delete(ctx context.Context, id string) (string, error) { return "", nil }

func TestCheckpointToolsAreOptIn(t *testing.T) {
	ctx := context.Background()
	plain, err := New(memfs.New(memfs.Options{}), Options{})
	require.NoError(t, err)
	defs, err := plain.Tools("")
	require.NoError(t, err)
	for _, d := range defs {
		assert.NotContains(t, d.Name, "checkpoint", "not in the default list")
	}
	res := plain.Call(ctx, "", VerbCheckpointRestore, json.RawMessage(`{"id":"c1"}`))
	assert.True(t, res.IsError)

	fake := &fakeCheckpoints{}
	w, err := New(memfs.New(memfs.Options{}), Options{Checkpoints: fake})
	require.NoError(t, err)
	for _, dialect := range Dialects {
		defs, err := w.Tools(dialect)
		require.NoError(t, err)
		ann := map[string]Annotations{}
		for _, d := range defs {
			ann[d.Name] = d.Annotations
		}
		assert.Equal(t, Annotations{Destructive: true, Idempotent: true}, ann[VerbCheckpointRestore], dialect)
		assert.Equal(t, Annotations{ReadOnly: true, Idempotent: true}, ann[VerbCheckpointList], dialect)
		assert.Equal(t, Annotations{}, ann[VerbCheckpointCreate], dialect)
		assert.True(t, ann[VerbCheckpointDelete].Destructive, dialect)
	}
	res = w.Call(ctx, DialectClaude, VerbCheckpointRestore, json.RawMessage(`{"id":"c1"}`))
	require.False(t, res.IsError, res.Text)
	assert.Equal(t, "restored", res.Text)
	res = w.Call(ctx, "", VerbCheckpointRestore, json.RawMessage(`{"id":"c7"}`))
	assert.True(t, res.IsError)
	assert.Contains(t, res.Text, `"c7"`)
	res = w.Call(ctx, "", VerbCheckpointDiff, json.RawMessage(`{"id":"c1","paths":["/memory"]}`))
	require.False(t, res.IsError, res.Text)
	res = w.Call(ctx, "", VerbCheckpointDiff, json.RawMessage(`{"id":"c1","paths":["relative"]}`))
	assert.True(t, res.IsError)
	assert.Equal(t, []string{"restore c1", "diff c1  /memory"}, fake.calls)
}

func TestBeforeCallNoteEndsTheResult(t *testing.T) {
	ctx := context.Background()
	w, err := New(memfs.New(memfs.Options{}), Options{BeforeCall: func(ctx context.Context, c *CallInfo) error {
		c.Note = "[checkpoint c3 undoes this call]"
		return nil
	}})
	require.NoError(t, err)
	res := w.Call(ctx, "", VerbWrite, json.RawMessage(`{"path":"/f","fileText":"x"}`))
	require.False(t, res.IsError, res.Text)
	assert.True(t, strings.HasSuffix(res.Text, "\n[checkpoint c3 undoes this call]"), res.Text)
	res = w.Call(ctx, "", VerbRead, json.RawMessage(`{"path":"/nope"}`))
	assert.True(t, res.IsError)
	assert.Contains(t, res.Text, "[checkpoint c3 undoes this call]", "an error says it too: a failed call may have changed something")
}

func TestCheckpointToolsInADryRun(t *testing.T) {
	ctx := context.Background()
	fake := &fakeCheckpoints{}
	w, err := New(memfs.New(memfs.Options{}), Options{Checkpoints: fake, DryRun: true})
	require.NoError(t, err)
	res := w.Call(ctx, "", VerbCheckpointRestore, json.RawMessage(`{"id":"c1"}`))
	require.False(t, res.IsError, res.Text)
	assert.Contains(t, res.Text, "dry run")
	assert.Contains(t, res.Text, "diff")
	res = w.Call(ctx, "", VerbCheckpointCreate, json.RawMessage(`{}`))
	require.False(t, res.IsError, res.Text)
	assert.Equal(t, []string{"diff c1  "}, fake.calls, "nothing restored or taken")
}
