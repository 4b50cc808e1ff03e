// Package deploy_test checks the deployment files as far as a machine
// without a container engine or systemd as init can: the Kubernetes
// manifest parses and wires the sidecar as documented, the systemd unit
// passes systemd-analyze and its example config builds a workspace with
// the real binary, and the Dockerfile's build command makes a static
// binary. The mount propagation the sidecar relies on is tested with mount
// namespaces in integration/sidecar_test.go.
package deploy_test

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/vfsmount/vfsmount/internal/testutil"
)

// buildVfsmount builds cmd/vfsmount into dir with the environment and flags
// given, and returns its path.
func buildVfsmount(t *testing.T, dir string, env []string, flags ...string) string {
	t.Helper()
	bin := filepath.Join(dir, "vfsmount")
	args := append(append([]string{"build"}, flags...), "-o", bin, "github.com/vfsmount/vfsmount/cmd/vfsmount")
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

type k8sProbe struct {
	Exec struct {
		Command []string `yaml:"command"`
	} `yaml:"exec"`
}

type k8sContainer struct {
	Name            string   `yaml:"name"`
	Image           string   `yaml:"image"`
	Command         []string `yaml:"command"`
	Args            []string `yaml:"args"`
	RestartPolicy   string   `yaml:"restartPolicy"`
	SecurityContext struct {
		Privileged   bool `yaml:"privileged"`
		Capabilities struct {
			Add  []string `yaml:"add"`
			Drop []string `yaml:"drop"`
		} `yaml:"capabilities"`
	} `yaml:"securityContext"`
	VolumeMounts []struct {
		Name             string `yaml:"name"`
		MountPath        string `yaml:"mountPath"`
		MountPropagation string `yaml:"mountPropagation"`
	} `yaml:"volumeMounts"`
	StartupProbe   *k8sProbe `yaml:"startupProbe"`
	ReadinessProbe *k8sProbe `yaml:"readinessProbe"`
	Lifecycle      struct {
		PreStop *k8sProbe `yaml:"preStop"`
	} `yaml:"lifecycle"`
}

type k8sObject struct {
	Kind string            `yaml:"kind"`
	Data map[string]string `yaml:"data"`
	Spec struct {
		Volumes []struct {
			Name     string    `yaml:"name"`
			EmptyDir *struct{} `yaml:"emptyDir"`
		} `yaml:"volumes"`
		InitContainers []k8sContainer `yaml:"initContainers"`
		Containers     []k8sContainer `yaml:"containers"`
	} `yaml:"spec"`
}

// propagation returns how c mounts volume, and where.
func propagation(c k8sContainer, volume string) (path, mode string, ok bool) {
	for _, m := range c.VolumeMounts {
		if m.Name == volume {
			return m.MountPath, m.MountPropagation, true
		}
	}
	return "", "", false
}

func TestKubernetesSidecar(t *testing.T) {
	f, err := os.Open("kubernetes/sidecar.yaml")
	require.NoError(t, err)
	defer f.Close()
	dec := yaml.NewDecoder(f)
	var objs []k8sObject
	for {
		var o k8sObject
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "sidecar.yaml parses")
		objs = append(objs, o)
	}
	var pod, cm *k8sObject
	for i := range objs {
		switch objs[i].Kind {
		case "Pod":
			pod = &objs[i]
		case "ConfigMap":
			cm = &objs[i]
		}
	}
	require.NotNil(t, pod, "a Pod")
	require.NotNil(t, cm, "a ConfigMap with the workspace config")

	var cfg struct {
		Mounts []map[string]any `yaml:"mounts"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(cm.Data["vfsmount.yaml"]), &cfg))
	assert.NotEmpty(t, cfg.Mounts, "the config names mounts")

	var sidecar *k8sContainer
	for i, c := range pod.Spec.InitContainers {
		if c.Name == "vfsmount" {
			sidecar = &pod.Spec.InitContainers[i]
		}
	}
	require.NotNil(t, sidecar, "the vfsmount sidecar")
	require.Len(t, pod.Spec.Containers, 1)
	agent := pod.Spec.Containers[0]

	assert.Equal(t, "Always", sidecar.RestartPolicy, "a native sidecar")
	assert.True(t, sidecar.SecurityContext.Privileged, "Bidirectional propagation needs a privileged container")
	sidePath, sideMode, ok := propagation(*sidecar, "workspace")
	require.True(t, ok, "the sidecar mounts the workspace volume")
	assert.Equal(t, "Bidirectional", sideMode)
	agentPath, agentMode, ok := propagation(agent, "workspace")
	require.True(t, ok, "the agent mounts the workspace volume")
	assert.Equal(t, "HostToContainer", agentMode)
	assert.Equal(t, sidePath, agentPath, "both see the volume at the same path")
	assert.False(t, agent.SecurityContext.Privileged, "the agent is not privileged")

	// The sidecar mounts at a directory of the volume, the one its probes
	// and preStop name, and which the agent works in.
	require.NotEmpty(t, sidecar.Args)
	mountpoint := sidecar.Args[len(sidecar.Args)-1]
	assert.Contains(t, sidecar.Args, "mount")
	assert.True(t, strings.HasPrefix(mountpoint, sidePath+"/"), "mountpoint %s is in the volume", mountpoint)
	require.NotNil(t, sidecar.ReadinessProbe)
	assert.Equal(t, []string{"vfsmount", "status", mountpoint}, sidecar.ReadinessProbe.Exec.Command)
	require.NotNil(t, sidecar.StartupProbe)
	assert.Equal(t, []string{"vfsmount", "status", mountpoint}, sidecar.StartupProbe.Exec.Command)
	require.NotNil(t, sidecar.Lifecycle.PreStop)
	assert.Equal(t, []string{"vfsmount", "umount", "--lazy", mountpoint}, sidecar.Lifecycle.PreStop.Exec.Command)
	assert.Contains(t, sidecar.Args, "--allow-other", "the agent runs as another uid")

	var mkdir bool
	for _, c := range pod.Spec.InitContainers {
		if len(c.Command) == 3 && c.Command[0] == "mkdir" && c.Command[2] == mountpoint {
			mkdir = true
		}
	}
	assert.True(t, mkdir, "an init container creates the mountpoint")
}

// unitKeys parses a systemd unit into section -> key -> values.
func unitKeys(t *testing.T, path string) map[string]map[string][]string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	out := map[string]map[string][]string{}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			section = strings.Trim(line, "[]")
			out[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			require.True(t, ok, "%s: %q is not key=value", path, line)
			require.NotEmpty(t, section, "%s: %q before any section", path, line)
			out[section][k] = append(out[section][k], v)
		}
	}
	return out
}

func TestSystemdUnit(t *testing.T) {
	const unit = "systemd/vfsmount@.service"
	u := unitKeys(t, unit)
	svc := u["Service"]
	require.NotNil(t, svc)
	assert.Equal(t, []string{"/usr/local/bin/vfsmount --log-format json mount --config /etc/vfsmount/%i.yaml ${MOUNTPOINT}"}, svc["ExecStart"])
	assert.Equal(t, []string{"SIGTERM"}, svc["KillSignal"], "SIGTERM is vfsmount's clean unmount")
	assert.Equal(t, []string{"-/usr/local/bin/vfsmount umount --lazy ${MOUNTPOINT}"}, svc["ExecStopPost"])
	assert.Contains(t, strings.Join(svc["ExecStartPost"], " "), "vfsmount status", "active means live")
	// Each of these gives the service its own mount namespace, where
	// the mount would be invisible to everyone else.
	for _, k := range []string{"PrivateTmp", "ProtectSystem", "ProtectHome", "PrivateDevices", "ReadOnlyPaths", "TemporaryFileSystem", "PrivateMounts", "MountFlags"} {
		assert.NotContains(t, svc, k)
	}
	assert.Equal(t, []string{"multi-user.target"}, u["Install"]["WantedBy"])

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("systemd-analyze not installed: the unit was parsed but not verified")
		return
	}
	// Verify an instance, with the binary path pointing at one that
	// exists (verify checks executables).
	dir := t.TempDir()
	data, err := os.ReadFile(unit)
	require.NoError(t, err)
	bin, err := os.Executable()
	require.NoError(t, err)
	data = bytes.ReplaceAll(data, []byte("/usr/local/bin/vfsmount"), []byte(bin))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "vfsmount@.service"), data, 0o644))
	require.NoError(t, os.Symlink("vfsmount@.service", filepath.Join(dir, "vfsmount@agent.service")))
	out, err := exec.Command(analyze, "verify", "--man=no", filepath.Join(dir, "vfsmount@agent.service")).CombinedOutput()
	assert.NoError(t, err, "%s", out)
	assert.Empty(t, strings.TrimSpace(string(out)), "systemd-analyze verify has no complaint")
}

// TestSystemdExampleConfig builds the workspace the example config
// describes, with its host paths moved under a temporary directory.
func TestSystemdExampleConfig(t *testing.T) {
	data, err := os.ReadFile("systemd/example.yaml")
	require.NoError(t, err)
	dir := t.TempDir()
	repo := filepath.Join(dir, "app.git")
	work := filepath.Join(dir, "work")
	testutil.Git(t, dir, "init", "-q", "--bare", "-b", "main", repo)
	testutil.GitInit(t, work)
	testutil.GitCommit(t, work, map[string]string{"main.go": "package main\n"}, "init")
	testutil.Git(t, work, "push", "-q", repo, "main")
	require.NoError(t, os.Mkdir(filepath.Join(dir, "datasets"), 0o755))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "log"), 0o755))

	cfg := strings.NewReplacer(
		"/srv/git/app.git", repo,
		"/srv/datasets", filepath.Join(dir, "datasets"),
		"/var/log/vfsmount", filepath.Join(dir, "log"),
	).Replace(string(data))
	require.NotContains(t, cfg, "/srv/", "every host path was moved")
	path := filepath.Join(dir, "agent.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o644))

	bin := buildVfsmount(t, t.TempDir(), nil)
	cmd := exec.Command(bin, "--log-format", "json", "tools", "--config", path, "--cache-dir", filepath.Join(dir, "cache"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "the example config builds a workspace: %s", stderr.String())
	assert.Regexp(t, regexp.MustCompile(`(?m)^write$`), string(out), "the memory mount is writable")
	assert.Contains(t, stderr.String(), `"msg":"git mount pinned"`)
}

// TestDockerfile reads the Dockerfile (no engine here to build it) and
// builds the binary as its build stage does, checking that it is static.
func TestDockerfile(t *testing.T) {
	data, err := os.ReadFile("../Dockerfile")
	require.NoError(t, err)
	df := string(data)
	froms := regexp.MustCompile(`(?m)^FROM\s+(\S+)(?:\s+AS\s+(\S+))?`).FindAllStringSubmatch(df, -1)
	require.Len(t, froms, 2, "two stages: build and runtime")
	assert.Equal(t, "build", froms[0][2])
	assert.Equal(t, "debian:bookworm-slim", froms[1][1])
	assert.Contains(t, df, "COPY --from=build /out/vfsmount /usr/local/bin/vfsmount")
	assert.Regexp(t, `apt-get install -y --no-install-recommends[^\n]*\bfuse3\b[^\n]*\bbubblewrap\b`, df)
	assert.Contains(t, df, `ENTRYPOINT ["vfsmount"]`)
	build := regexp.MustCompile(`RUN CGO_ENABLED=0 go build (-trimpath -ldflags "[^"]*")`).FindStringSubmatch(df)
	require.NotNil(t, build, "the build stage builds with CGO_ENABLED=0")

	bin := buildVfsmount(t, t.TempDir(), []string{"CGO_ENABLED=0"}, "-trimpath", "-ldflags", "-s -w -X main.version=docker-test")
	f, err := elf.Open(bin)
	require.NoError(t, err)
	defer f.Close()
	for _, p := range f.Progs {
		assert.NotEqual(t, elf.PT_INTERP, p.Type, "a static binary has no interpreter")
	}
	out, err := exec.Command(bin, "version").Output()
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(out), "vfsmount docker-test\n"), "%s", out)
}
