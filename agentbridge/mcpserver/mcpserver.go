// Package mcpserver presents an agentbridge workspace as an MCP server on
// the official Go SDK: one MCP tool per tool of the chosen dialect, hints
// (readOnlyHint, destructiveHint, idempotentHint, openWorldHint) as the
// verb declares them, and the workspace brief as the server instructions.
//
// Each MCP session is one agentbridge.Session: the shell's directory and
// the processes codex's exec_command leaves running belong to it, and end
// when it closes.
//
// It is a package of its own so that agentbridge does not pull the SDK into
// every program that only needs the verbs.
package mcpserver

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/vfsmount/vfsmount/agentbridge"
)

// New builds an MCP server offering w's tools in dialect ("" is
// canonical), with w's brief as its instructions. Serve stdio with
// server.Run(ctx, &mcp.StdioTransport{}).
func New(w *agentbridge.Workspace, dialect string, impl *mcp.Implementation) (*mcp.Server, error) {
	defs, err := w.Tools(dialect)
	if err != nil {
		return nil, err
	}
	if impl == nil {
		impl = &mcp.Implementation{Name: "vfsmount"}
	}
	s := mcp.NewServer(impl, &mcp.ServerOptions{Instructions: w.BriefFor(dialect)})
	sessions := &sessionMap{w: w, m: map[*mcp.ServerSession]*agentbridge.Session{}}
	for _, d := range defs {
		destructive, openWorld := d.Annotations.Destructive, d.Annotations.OpenWorld
		tool := &mcp.Tool{
			Name:        d.Name,
			Description: d.Description,
			InputSchema: d.InputSchema,
			Annotations: &mcp.ToolAnnotations{
				ReadOnlyHint:    d.Annotations.ReadOnly,
				DestructiveHint: &destructive,
				IdempotentHint:  d.Annotations.Idempotent,
				OpenWorldHint:   &openWorld,
			},
		}
		name := d.Name
		s.AddTool(tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if sess := sessions.of(req.Session); sess != nil {
				ctx = agentbridge.WithSession(ctx, sess)
			}
			res := w.Call(ctx, dialect, name, req.Params.Arguments)
			return &mcp.CallToolResult{Content: content(res), IsError: res.IsError}, nil
		})
	}
	return s, nil
}

// content is a result as MCP content: its parts when it has them (an
// image Read returns is an ImageContent), else its text.
func content(res agentbridge.Result) []mcp.Content {
	if len(res.Content) == 0 {
		return []mcp.Content{&mcp.TextContent{Text: res.Text}}
	}
	out := make([]mcp.Content, 0, len(res.Content))
	for _, c := range res.Content {
		switch c.Type {
		case "image":
			out = append(out, &mcp.ImageContent{Data: c.Data, MIMEType: c.MIMEType})
		default:
			out = append(out, &mcp.TextContent{Text: c.Text})
		}
	}
	return out
}

// sessionMap gives each MCP session its agentbridge.Session, closed when
// the MCP session ends.
type sessionMap struct {
	w  *agentbridge.Workspace
	mu sync.Mutex
	m  map[*mcp.ServerSession]*agentbridge.Session
}

// of returns ss's session, opening it on its first call; nil without an
// MCP session (the call is then a session of its own).
func (sm *sessionMap) of(ss *mcp.ServerSession) *agentbridge.Session {
	if ss == nil {
		return nil
	}
	sm.mu.Lock()
	defer sm.mu.Unlock()
	if s, ok := sm.m[ss]; ok {
		return s
	}
	s := sm.w.NewSession()
	sm.m[ss] = s
	go func() {
		_ = ss.Wait()
		sm.mu.Lock()
		delete(sm.m, ss)
		sm.mu.Unlock()
		s.Close()
	}()
	return s
}
