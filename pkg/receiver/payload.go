package receiver

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// maxURLLength caps each URL taken from a payload.
const maxURLLength = 2048

// pushPayload is what a push payload says of its repository, for every provider:
// GitHub, Gitea and Forgejo have repository.*_url; GitLab has project.* and
// repository.git_*_url.
type pushPayload struct {
	Ref        string `json:"ref"`
	Repository *struct {
		CloneURL   string `json:"clone_url"`
		SSHURL     string `json:"ssh_url"`
		GitURL     string `json:"git_url"`
		HTMLURL    string `json:"html_url"`
		GitHTTPURL string `json:"git_http_url"`
		GitSSHURL  string `json:"git_ssh_url"`
	} `json:"repository"`
	Project *struct {
		GitHTTPURL string `json:"git_http_url"`
		GitSSHURL  string `json:"git_ssh_url"`
		WebURL     string `json:"web_url"`
	} `json:"project"`
}

// push is what a push payload says: the repository's URLs, and the ref (for logs only).
type push struct {
	urls []string
	ref  string
}

// parsePush reads a push payload. Its errors never quote the payload.
func parsePush(body []byte) (push, error) {
	var p pushPayload
	if err := json.Unmarshal(body, &p); err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			return push{}, fmt.Errorf("reading the push payload: not JSON (at byte %d)", syntax.Offset)
		}
		return push{}, fmt.Errorf("reading the push payload: %w", err)
	}
	var urls []string
	add := func(u string) {
		if u != "" && len(u) <= maxURLLength && !slices.Contains(urls, u) {
			urls = append(urls, u)
		}
	}
	if r := p.Repository; r != nil {
		for _, u := range []string{r.CloneURL, r.SSHURL, r.GitURL, r.HTMLURL, r.GitHTTPURL, r.GitSSHURL} {
			add(u)
		}
	}
	if r := p.Project; r != nil {
		for _, u := range []string{r.GitHTTPURL, r.GitSSHURL, r.WebURL} {
			add(u)
		}
	}
	if len(urls) == 0 {
		return push{}, errors.New("reading the push payload: it names no repository URL")
	}
	return push{urls: urls, ref: p.Ref}, nil
}
