package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"time"

	"github.com/spf13/cobra"
)

func newLogin(g *globals) *cobra.Command {
	var noBrowser bool
	cmd := &cobra.Command{
		Use:   "login",
		Short: "Print a one-time sign-in link for the web page (and open it in a browser)",
		Long: "Asks the platform for a sign-in link that works once, for two minutes, and prints it. " +
			"Where there is a display, the link also opens in the default browser (--no-browser only prints it).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			var link struct {
				URL       string    `json:"url"`
				ExpiresAt time.Time `json:"expires_at"`
			}
			if _, err := c.Do(cmd.Context(), http.MethodPost, "/web/login-links", nil, nil, &link); err != nil {
				return err
			}
			fmt.Fprintf(os.Stdout, "Open this link to sign in (it works once, until %s):\n\n  %s\n\n",
				link.ExpiresAt.Local().Format(time.Kitchen), link.URL)
			if noBrowser {
				return nil
			}
			if err := openBrowser(link.URL); err != nil {
				fmt.Fprintf(os.Stderr, "(no browser opened: %v)\n", err)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&noBrowser, "no-browser", false, "only print the link")
	return cmd
}

// openBrowser opens url in the desktop's default browser, when there is a
// desktop.
func openBrowser(url string) error {
	var name string
	switch runtime.GOOS {
	case "darwin":
		name = "open"
	case "windows":
		return fmt.Errorf("open the link yourself")
	default:
		if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
			return fmt.Errorf("no display")
		}
		name = "xdg-open"
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return fmt.Errorf("%s not found", name)
	}
	cmd := exec.Command(path, url)
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		return err
	}
	// The opener hands the link to the browser and exits by itself.
	return cmd.Process.Release()
}
