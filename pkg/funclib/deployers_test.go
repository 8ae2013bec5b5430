package funclib

import "testing"

func TestDeployerOf(t *testing.T) {
	for _, tt := range []struct {
		m    Metadata
		want string
	}{
		{Metadata{}, DeployerKnative},
		{Metadata{Deployer: DeployerRaw}, DeployerRaw},
		{Metadata{DeployedWith: DeployerKeda}, DeployerKeda},
		// What was asked for wins over what it was deployed with, as func-utils deploy resolves it.
		{Metadata{Deployer: DeployerKeda, DeployedWith: DeployerRaw}, DeployerKeda},
	} {
		if got := DeployerOf(tt.m); got != tt.want {
			t.Errorf("DeployerOf(deployer %q, deploy.deployer %q) = %q, want %q", tt.m.Deployer, tt.m.DeployedWith, got, tt.want)
		}
	}
}

// TestCheckDeployerSwitch holds func's own rule: the same deployer, and raw to keda,
// are the only moves that strand nothing.
func TestCheckDeployerSwitch(t *testing.T) {
	for _, from := range Deployers() {
		for _, to := range Deployers() {
			safe := from == to || (from == DeployerRaw && to == DeployerKeda)
			if err := CheckDeployerSwitch(from, to); (err == nil) != safe {
				t.Errorf("CheckDeployerSwitch(%s, %s) = %v, want safe=%v", from, to, err, safe)
			}
		}
	}
}

// TestFuncYAMLDeployer: func.yaml's deployer and deploy.deployer reach Metadata.
func TestFuncYAMLDeployer(t *testing.T) {
	m, err := LoadFuncYAML([]byte("specVersion: 0.36.0\nname: hello\nruntime: go\ndeployer: keda\ndeploy:\n  deployer: raw\n"), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if m.Deployer != DeployerKeda || m.DeployedWith != DeployerRaw {
		t.Errorf("Metadata deployer %q, deployed with %q; want keda, raw", m.Deployer, m.DeployedWith)
	}
}

// TestCheckRecordedSwitch: func's deploy refuses a func.yaml whose deployer would
// switch from the one it recorded, once it records a deploy.
func TestCheckRecordedSwitch(t *testing.T) {
	for _, tt := range []struct {
		m    Metadata
		safe bool
	}{
		{Metadata{Deployer: DeployerRaw}, true},
		{Metadata{Deployer: DeployerRaw, DeployedWith: DeployerKnative}, true}, // no deploy recorded
		{Metadata{Deployer: DeployerRaw, DeployedWith: DeployerKnative, DeployedNamespace: "fns"}, false},
		{Metadata{Deployer: DeployerKeda, DeployedWith: DeployerRaw, DeployedNamespace: "fns"}, true},
		{Metadata{DeployedWith: DeployerKeda, DeployedNamespace: "fns"}, true},
	} {
		if err := CheckRecordedSwitch(tt.m); (err == nil) != tt.safe {
			t.Errorf("CheckRecordedSwitch(%+v) = %v, want safe=%v", tt.m, err, tt.safe)
		}
	}
}
