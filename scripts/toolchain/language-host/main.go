// Command pulumi-language-nodejs is THIS PROJECT'S OWN implementation of the Pulumi Node.js
// language host protocol (the pulumirpc.LanguageRuntime gRPC service). It was written because the
// upstream pulumi-language-nodejs Go module is not served by the Go module proxy available here,
// so a Pulumi CLI built from source has no Node.js language host. It is not the upstream code.
//
// It launches the Node.js runtime that ships inside the @pulumi/pulumi npm package of the program
// (cmd/run for programs, cmd/run-policy-pack for policy packs, cmd/run-plugin for plugins).
// Supported Pulumi.yaml runtime options: typescript (default true), tsconfig, nodeargs.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"
)

// version is reported to the engine; the build script sets it with -ldflags "-X main.version=...".
var version = "3.276.0"

// exitCodeBail is what @pulumi/pulumi's cmd/run exits with after it already showed the user the error.
const exitCodeBail = 32

func main() {
	// The engine launches language hosts as: [--logtostderr] [-v=N] [--tracing URL] ENGINE_ADDRESS.
	// (--logtostderr and -v are registered by glog, which the Pulumi SDK links in.)
	tracing := flag.String("tracing", "", "tracing endpoint, forwarded to the Node.js runtime")
	flag.String("root", "", "accepted for compatibility; ignored")
	flag.Parse()

	h := &host{tracing: *tracing}
	h.shutdown, h.cancelAll = context.WithCancel(context.Background())
	if flag.NArg() > 0 {
		h.engineAddr = flag.Arg(0)
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if h.engineAddr != "" {
		// Exit once the engine goes away, so no host outlives its CLI.
		if err := rpcutil.Healthcheck(ctx, h.engineAddr, 5*time.Minute, cancel); err != nil {
			fatalf("could not start engine health check: %v", err)
		}
	}
	stop := make(chan bool)
	go func() { <-ctx.Done(); close(stop) }()

	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Cancel: stop,
		Init: func(srv *grpc.Server) error {
			pulumirpc.RegisterLanguageRuntimeServer(srv, h)
			return nil
		},
	})
	if err != nil {
		fatalf("could not start language host RPC server: %v", err)
	}
	fmt.Printf("%d\n", handle.Port) // the engine reads the port from our first stdout line
	if err := <-handle.Done; err != nil {
		fatalf("language host RPC server stopped: %v", err)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pulumi-language-nodejs: "+format+"\n", args...)
	os.Exit(1)
}

type host struct {
	pulumirpc.UnimplementedLanguageRuntimeServer
	engineAddr string
	tracing    string
	// shutdown is cancelled by the Cancel RPC; it kills every node process this host started.
	shutdown  context.Context
	cancelAll context.CancelFunc
}

// withShutdown returns ctx, additionally cancelled when the engine calls Cancel.
func (h *host) withShutdown(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(h.shutdown, cancel)
	return ctx, func() { stop(); cancel() }
}

func (h *host) Cancel(context.Context, *emptypb.Empty) (*emptypb.Empty, error) {
	h.cancelAll()
	return &emptypb.Empty{}, nil
}

func (h *host) Handshake(
	_ context.Context, req *pulumirpc.LanguageHandshakeRequest,
) (*pulumirpc.LanguageHandshakeResponse, error) {
	if req.GetEngineAddress() != "" {
		h.engineAddr = req.GetEngineAddress()
	}
	return &pulumirpc.LanguageHandshakeResponse{}, nil
}

func (h *host) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: version}, nil
}

// nodeOptions are the `runtime.options` of a nodejs Pulumi.yaml / PulumiPolicy.yaml.
type nodeOptions struct {
	typescript bool
	tsconfig   string
	nodeargs   []string
}

func parseOptions(info *pulumirpc.ProgramInfo) nodeOptions {
	o := nodeOptions{typescript: true}
	if info.GetOptions() == nil {
		return o
	}
	m := info.GetOptions().AsMap()
	if v, ok := m["typescript"].(bool); ok {
		o.typescript = v
	}
	if v, ok := m["tsconfig"].(string); ok {
		o.tsconfig = v
	}
	if v, ok := m["nodeargs"].(string); ok {
		o.nodeargs = strings.Fields(v)
	}
	return o
}

// findUp returns the first existing dir/rel, walking from dir up to the filesystem root.
func findUp(dir, rel string) (string, bool) {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if p := filepath.Join(d, rel); exists(p) {
			return p, true
		}
		if d == filepath.Dir(d) {
			return "", false
		}
	}
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Run executes a Pulumi program with `node .../@pulumi/pulumi/cmd/run`.
func (h *host) Run(ctx context.Context, req *pulumirpc.RunRequest) (*pulumirpc.RunResponse, error) {
	info := req.GetInfo()
	progDir, entry := info.GetProgramDirectory(), info.GetEntryPoint()
	if progDir == "" {
		progDir = req.GetPwd()
	}
	if entry == "" {
		entry = req.GetProgram() //nolint:staticcheck // older engines
	}
	if entry == "" {
		entry = "."
	}
	opts := parseOptions(info)

	node, err := exec.LookPath("node")
	if err != nil {
		return &pulumirpc.RunResponse{Error: "could not find node on the $PATH: " + err.Error()}, nil
	}
	runPath, ok := findUp(progDir, filepath.Join("node_modules", "@pulumi", "pulumi", "cmd", "run"))
	if !ok {
		return &pulumirpc.RunResponse{Error: "It looks like the Pulumi SDK has not been installed " +
			"(no node_modules/@pulumi/pulumi above " + progDir + "). Have you run npm install?"}, nil
	}

	args := append(append([]string{}, opts.nodeargs...), runPath)
	flagArg := func(name, value string) {
		if value != "" {
			args = append(args, "--"+name, value)
		}
	}
	flagArg("monitor", req.GetMonitorAddress())
	flagArg("engine", h.engineAddr)
	flagArg("organization", req.GetOrganization())
	flagArg("project", req.GetProject())
	flagArg("root-directory", info.GetRootDirectory())
	flagArg("stack", req.GetStack())
	flagArg("pwd", req.GetPwd())
	if req.GetDryRun() {
		args = append(args, "--dry-run")
	}
	if req.GetParallel() > 1 {
		flagArg("parallel", strconv.Itoa(int(req.GetParallel())))
	}
	flagArg("tracing", h.tracing)
	args = append(append(args, entry), req.GetArgs()...)

	config := req.GetConfig()
	if config == nil {
		config = map[string]string{}
	}
	secretKeys := req.GetConfigSecretKeys()
	if secretKeys == nil {
		secretKeys = []string{}
	}
	configJSON, err := json.Marshal(config)
	if err != nil {
		return nil, err
	}
	secretKeysJSON, err := json.Marshal(secretKeys)
	if err != nil {
		return nil, err
	}
	env := append(os.Environ(),
		"PULUMI_CONFIG="+string(configJSON),
		"PULUMI_CONFIG_SECRET_KEYS="+string(secretKeysJSON))
	if opts.typescript {
		env = append(env, "PULUMI_NODEJS_TYPESCRIPT=true")
	}
	if opts.tsconfig != "" {
		env = append(env, "PULUMI_NODEJS_TSCONFIG_PATH="+opts.tsconfig)
	}

	ctx, done := h.withShutdown(ctx)
	defer done()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = req.GetPwd()
	cmd.Env = env
	// Our stdout/stderr are read by the engine and shown to the user.
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		var exitErr *exec.ExitError
		switch {
		case errors.As(err, &exitErr) && exitErr.ExitCode() == exitCodeBail:
			return &pulumirpc.RunResponse{Bail: true}, nil
		case errors.As(err, &exitErr) && exitErr.ExitCode() >= 0:
			return &pulumirpc.RunResponse{
				Error: fmt.Sprintf("Program exited with non-zero exit code: %d", exitErr.ExitCode()),
			}, nil
		default:
			return &pulumirpc.RunResponse{
				Error: fmt.Sprintf("Problem executing program (could not run language executor): %v", err),
			}, nil
		}
	}
	return &pulumirpc.RunResponse{}, nil
}

// RunPlugin runs a plugin written in Node.js: a policy pack (kind "analyzer", launched by the engine
// for `--policy-pack DIR` with a nodejs PulumiPolicy.yaml) or a provider/tool (PulumiPlugin.yaml).
func (h *host) RunPlugin(
	req *pulumirpc.RunPluginRequest, srv grpc.ServerStreamingServer[pulumirpc.RunPluginResponse],
) error {
	info := req.GetInfo()
	dir := info.GetProgramDirectory()
	if dir == "" {
		dir = req.GetProgram() //nolint:staticcheck // older engines
	}
	send := newSender(srv.Send)
	stdout := writerFunc(func(b []byte) error {
		return send(&pulumirpc.RunPluginResponse{Output: &pulumirpc.RunPluginResponse_Stdout{Stdout: b}})
	})
	stderr := writerFunc(func(b []byte) error {
		return send(&pulumirpc.RunPluginResponse{Output: &pulumirpc.RunPluginResponse_Stderr{Stderr: b}})
	})
	exit := func(code int32) error {
		return send(&pulumirpc.RunPluginResponse{Output: &pulumirpc.RunPluginResponse_Exitcode{Exitcode: code}})
	}

	// The engine passes logging flags followed by its address; the Node.js runners want the address only.
	var engineArgs []string
	for i := 0; i < len(req.GetArgs()); i++ {
		switch a := req.GetArgs()[i]; {
		case a == "--logtostderr" || strings.HasPrefix(a, "-v="):
		case a == "--tracing":
			i++
		default:
			engineArgs = append(engineArgs, a)
		}
	}

	runner := "run-plugin"
	if req.GetKind() == "analyzer" {
		runner = "run-policy-pack"
	}
	runPath, ok := findUp(dir, filepath.Join("node_modules", "@pulumi", "pulumi", "cmd", runner))
	if !ok {
		// This exact text makes the engine tell the user to install the pack's dependencies.
		_, _ = stderr.Write([]byte("Error: Cannot find module '@pulumi/pulumi/cmd/" + runner + "' (from " + dir + ")\n"))
		return exit(1)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return fmt.Errorf("could not find node on the $PATH: %w", err)
	}

	// run-policy-pack wants `<engine-address> <program>`; run-plugin wants `<program> [args...]`.
	args := append(append([]string{}, parseOptions(info).nodeargs...), runPath)
	if runner == "run-policy-pack" {
		args = append(append(args, engineArgs...), dir)
	} else {
		args = append(append(args, dir), engineArgs...)
	}

	ctx, done := h.withShutdown(srv.Context())
	defer done()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = req.GetPwd()
	if runner == "run-policy-pack" {
		// The policy SDK reads the pack's package.json from the working directory.
		cmd.Dir = dir
	}
	if len(req.GetEnv()) > 0 {
		cmd.Env = req.GetEnv()
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Run(); err != nil {
		var exitErr *exec.ExitError
		if !errors.As(err, &exitErr) {
			return fmt.Errorf("running %s: %w", runner, err)
		}
		return exit(int32(exitErr.ExitCode()))
	}
	return exit(0)
}

// InstallDependencies runs `npm ci` (or `npm install` without a lockfile) unless node_modules exists.
func (h *host) InstallDependencies(
	req *pulumirpc.InstallDependenciesRequest, srv grpc.ServerStreamingServer[pulumirpc.InstallDependenciesResponse],
) error {
	dir := req.GetInfo().GetProgramDirectory()
	if dir == "" {
		dir = req.GetDirectory() //nolint:staticcheck // older engines
	}
	send := newSender(srv.Send)
	stdout := writerFunc(func(b []byte) error { return send(&pulumirpc.InstallDependenciesResponse{Stdout: b}) })
	stderr := writerFunc(func(b []byte) error { return send(&pulumirpc.InstallDependenciesResponse{Stderr: b}) })

	// With `main: bin/index.js` the program directory is bin/; npm works on the package.json above it.
	if pkg, ok := findUp(dir, "package.json"); ok {
		dir = filepath.Dir(pkg)
	}
	if exists(filepath.Join(dir, "node_modules")) {
		_, err := stdout.Write([]byte("node_modules already present in " + dir + "; skipping npm install\n"))
		return err
	}
	verb := "install"
	if exists(filepath.Join(dir, "package-lock.json")) {
		verb = "ci"
	}
	_, _ = stdout.Write([]byte("Running npm " + verb + " in " + dir + "\n"))
	cmd := exec.CommandContext(srv.Context(), "npm", verb)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("npm %s failed in %s: %w", verb, dir, err)
	}
	return nil
}

// packageJSON is the subset of package.json that this host reads.
type packageJSON struct {
	Name            string            `json:"name"`
	Version         string            `json:"version"`
	Dependencies    map[string]string `json:"dependencies"`
	DevDependencies map[string]string `json:"devDependencies"`
	Pulumi          *struct {
		Resource         bool   `json:"resource"`
		Name             string `json:"name"`
		Version          string `json:"version"`
		Server           string `json:"server"`
		Parameterization *struct {
			Name    string `json:"name"`
			Version string `json:"version"`
			Value   []byte `json:"value"` // base64 in package.json
		} `json:"parameterization"`
	} `json:"pulumi"`
}

func readPackageJSON(path string) (*packageJSON, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var p packageJSON
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", path, err)
	}
	return &p, nil
}

// requiredPackages lists the resource plugins declared by installed top-level npm packages
// (node_modules/NAME/package.json and node_modules/@SCOPE/NAME/package.json "pulumi" sections).
func requiredPackages(dir string) []*pulumirpc.PackageDependency {
	nodeModules, ok := findUp(dir, "node_modules")
	if !ok {
		return nil
	}
	var files []string
	for _, pattern := range []string{"*/package.json", "@*/*/package.json"} {
		m, _ := filepath.Glob(filepath.Join(nodeModules, pattern))
		files = append(files, m...)
	}
	var deps []*pulumirpc.PackageDependency
	seen := map[string]bool{}
	for _, f := range files {
		p, err := readPackageJSON(f)
		if err != nil || p.Pulumi == nil || !p.Pulumi.Resource {
			continue
		}
		name := p.Pulumi.Name
		if name == "" {
			name = strings.TrimPrefix(p.Name, "@pulumi/")
		}
		ver := p.Pulumi.Version
		if ver == "" {
			ver = p.Version
		}
		dep := &pulumirpc.PackageDependency{Name: name, Kind: "resource", Version: ver, Server: p.Pulumi.Server}
		if pz := p.Pulumi.Parameterization; pz != nil {
			dep.Parameterization = &pulumirpc.PackageParameterization{Name: pz.Name, Version: pz.Version, Value: pz.Value}
		}
		key := name + "@" + ver
		if pz := dep.Parameterization; pz != nil {
			key += "/" + pz.Name + "@" + pz.Version
		}
		if !seen[key] {
			seen[key] = true
			deps = append(deps, dep)
		}
	}
	return deps
}

func (h *host) GetRequiredPackages(
	_ context.Context, req *pulumirpc.GetRequiredPackagesRequest,
) (*pulumirpc.GetRequiredPackagesResponse, error) {
	return &pulumirpc.GetRequiredPackagesResponse{
		Packages: requiredPackages(req.GetInfo().GetProgramDirectory()),
	}, nil
}

func (h *host) GetRequiredPlugins(
	_ context.Context, req *pulumirpc.GetRequiredPluginsRequest,
) (*pulumirpc.GetRequiredPluginsResponse, error) {
	dir := req.GetInfo().GetProgramDirectory()
	if dir == "" {
		dir = req.GetPwd() //nolint:staticcheck // older engines
	}
	var plugins []*pulumirpc.PluginDependency
	for _, p := range requiredPackages(dir) {
		if p.Parameterization == nil {
			plugins = append(plugins, &pulumirpc.PluginDependency{
				Name: p.Name, Kind: p.Kind, Version: p.Version, Server: p.Server,
			})
		}
	}
	return &pulumirpc.GetRequiredPluginsResponse{Plugins: plugins}, nil
}

func (h *host) About(ctx context.Context, _ *pulumirpc.AboutRequest) (*pulumirpc.AboutResponse, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("could not find node on the $PATH: %w", err)
	}
	out, err := exec.CommandContext(ctx, node, "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("running node --version: %w", err)
	}
	return &pulumirpc.AboutResponse{
		Executable: node,
		Version:    strings.TrimPrefix(strings.TrimSpace(string(out)), "v"),
		Metadata:   map[string]string{"languageHost": "rke2-remediation pulumi-language-nodejs " + version},
	}, nil
}

// GetProgramDependencies reports the direct dependencies of the nearest package.json, with the
// installed version when node_modules has it (transitive dependencies are not listed).
func (h *host) GetProgramDependencies(
	_ context.Context, req *pulumirpc.GetProgramDependenciesRequest,
) (*pulumirpc.GetProgramDependenciesResponse, error) {
	pkgPath, ok := findUp(req.GetInfo().GetProgramDirectory(), "package.json")
	if !ok {
		return &pulumirpc.GetProgramDependenciesResponse{}, nil
	}
	pkg, err := readPackageJSON(pkgPath)
	if err != nil {
		return nil, err
	}
	var deps []*pulumirpc.DependencyInfo
	for _, set := range []map[string]string{pkg.Dependencies, pkg.DevDependencies} {
		for name, want := range set {
			ver := want
			installed := filepath.Join(filepath.Dir(pkgPath), "node_modules", name, "package.json")
			if p, err := readPackageJSON(installed); err == nil {
				ver = p.Version
			}
			deps = append(deps, &pulumirpc.DependencyInfo{Name: name, Version: ver})
		}
	}
	return &pulumirpc.GetProgramDependenciesResponse{Dependencies: deps}, nil
}

// writerFunc adapts a send function to io.Writer (exec copies child output through it).
type writerFunc func([]byte) error

func (f writerFunc) Write(b []byte) (int, error) {
	if err := f(append([]byte(nil), b...)); err != nil {
		return 0, err
	}
	return len(b), nil
}

// newSender serialises stream sends: gRPC streams allow one concurrent sender only.
func newSender[T any](send func(T) error) func(T) error {
	var mu sync.Mutex
	return func(msg T) error {
		mu.Lock()
		defer mu.Unlock()
		return send(msg)
	}
}
