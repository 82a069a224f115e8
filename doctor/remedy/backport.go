package remedy

import "strings"

// BackportCheck is how to see whether a distribution's package of bwrap carries the fixes
// for cves: the local changelog where the manager keeps one, otherwise where that
// distribution publishes its advisories. command is "" when there is no command to run.
func BackportCheck(manager, name, version string, cves []string) (advice, command string) {
	greps := make([]string, len(cves))
	for i, cve := range cves {
		greps[i] = "-e " + cve
	}
	pattern := strings.Join(greps, " ")
	switch manager {
	case "dpkg":
		command = "zcat " + Quote("/usr/share/doc/"+name+"/changelog.Debian.gz") + " | grep " + pattern
		return "a Debian or Ubuntu build: its changelog names the CVEs it fixed (`" + command +
			"`), and the distribution's security tracker lists them under the source package " + name, command
	case "rpm":
		command = "rpm -q --changelog " + Quote(name) + " | grep " + pattern
		return "an RPM build: its changelog names the CVEs it fixed (`" + command +
			"`), and the distribution's security advisories list them for " + name, command
	case "apk":
		return "an Alpine build: Alpine's security database (secdb) lists the CVEs fixed in each " + name + " release; look up " + version, ""
	case "pacman":
		return "an Arch build: Arch's security tracker lists the advisories for " + name + "; look up " + version, ""
	}
	return "", ""
}
