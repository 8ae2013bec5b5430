// Command release writes the release YAMLs of func-operator, split as Knative splits
// its own: hack/release.sh runs it on what `ko resolve -f config/` printed (every image
// built, pushed and pinned by digest) and on config/namespace/.
//
//	go run ./hack/release -version v1.2.3 -resolved resolved.yaml -namespace config/namespace -out DIR
//
// It writes to DIR:
//   - func-operator-crds.yaml: the CustomResourceDefinitions alone, so that deleting
//     the release (kubectl delete -f func-operator.yaml) deletes no Function;
//   - func-operator.yaml: everything else config/ holds (not its subfolders), each
//     image pinned by digest;
//   - func-operator-onboarding.yaml: config/namespace/onboard.yaml, which a namespace
//     admin applies with -n;
//   - func-operator-onboarding-keda.yaml: config/namespace/onboard-keda.yaml, a file of
//     its own as in config/ (a namespace admin may grant it only where the KEDA HTTP
//     add-on aggregates its rights into admin).
//
// It refuses a stream it cannot split: a document without a kind, no CRD, an image not
// pinned by digest, a file of config/namespace/ it does not know.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	version := flag.String("version", "", "the release version, vX.Y.Z[-pre] (named in each file's header)")
	resolved := flag.String("resolved", "", "what `ko resolve -f config/` printed")
	namespace := flag.String("namespace", "config/namespace", "the onboarding folder")
	out := flag.String("out", "", "the folder to write the release files to (it must exist)")
	flag.Parse()
	if *version == "" || *resolved == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "release: -version, -resolved and -out are required")
		os.Exit(2)
	}
	if err := run(*version, *resolved, *namespace, *out); err != nil {
		fmt.Fprintf(os.Stderr, "release: %v\n", err)
		os.Exit(1)
	}
}

// run reads the resolved config/ and the onboarding folder and writes the release
// files to out.
func run(version, resolved, namespace, out string) error {
	if err := CheckVersion(version); err != nil {
		return err
	}
	stream, err := os.ReadFile(resolved)
	if err != nil {
		return fmt.Errorf("reading what ko resolved: %w", err)
	}
	files, err := Split(version, stream)
	if err != nil {
		return fmt.Errorf("splitting what ko resolved: %w", err)
	}
	onboarding, err := Onboarding(version, namespace)
	if err != nil {
		return err
	}
	for name, content := range onboarding {
		files[name] = content
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(out, name), content, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return nil
}
