package jsonrpc

// Methods lists every method a Server answers, when it has what each needs
// (a workspace: tools.* and workspace.brief; an Exporter: workspace.diff,
// commit and reset; a Checkpointer: checkpoint.*; a StorePusher:
// store.*). A caller that must account for every way into the workspace (a
// security test) iterates it.
var Methods = []string{
	"tools.list", "tools.call", "workspace.brief",
	"workspace.diff", "workspace.commit", "workspace.reset",
	"checkpoint.create", "checkpoint.list", "checkpoint.diff", "checkpoint.restore", "checkpoint.delete",
	"store.push", "store.status", "store.resume",
}
