package platform

import (
	"io/fs"
	"testing"
	"testing/fstest"
)

// ubuntuLocalProfile is the one-profile file most guides tell Ubuntu users to write.
const ubuntuLocalProfile = `abi <abi/4.0>,
include <tunables/global>

profile bwrap /usr/bin/bwrap flags=(unconfined) {
  userns,

  # Site-specific additions and overrides. See local/README for details.
  include if exists <local/bwrap>
}
`

func TestProfileGrantsUserns(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		profile string
		path    string
		want    bool
	}{
		{"named profile with attachment", ubuntuLocalProfile, "/usr/bin/bwrap", true},
		{"exact path only", ubuntuLocalProfile, "/usr/local/bin/bwrap", false},
		{"path prefix is not the path", ubuntuLocalProfile, "/usr/bin/bwrap2", false},
		{"profile named by its path", "profile /usr/bin/bwrap {\n  userns,\n}\n", "/usr/bin/bwrap", true},
		{"bare path header", "/usr/bin/bwrap flags=(unconfined) {\n  userns,\n}\n", "/usr/bin/bwrap", true},
		{"one line, as the remedy prints it", "abi <abi/4.0>, include <tunables/global>  profile bwrap /opt/bwrapkit/bin/bwrap flags=(unconfined) { userns, }\n",
			"/opt/bwrapkit/bin/bwrap", true},
		{"quoted path with a space", "profile bwrap \"/opt/my tools/bwrap\" {\n  userns,\n}\n", "/opt/my tools/bwrap", true},
		{"flags with a space after the comma", "profile bwrap /usr/bin/bwrap flags=(attach_disconnected, mediate_deleted) {\n  allow userns,\n}\n", "/usr/bin/bwrap", true},
		{"userns create with audit", "profile bwrap /usr/bin/bwrap {\n  audit allow userns create,\n}\n", "/usr/bin/bwrap", true},
		{"trailing comment", "profile bwrap /usr/bin/bwrap {\n  userns, # for the sandbox\n}\n", "/usr/bin/bwrap", true},
		{"commented out", "profile bwrap /usr/bin/bwrap {\n  # userns,\n  #userns,\n}\n", "/usr/bin/bwrap", false},
		{"denied", "profile bwrap /usr/bin/bwrap {\n  audit deny userns,\n}\n", "/usr/bin/bwrap", false},
		{"no userns rule", "profile bwrap /usr/bin/bwrap {\n  capability,\n  network,\n}\n", "/usr/bin/bwrap", false},
		{"userns word inside another rule", "profile bwrap /usr/bin/bwrap {\n  owner /tmp/userns, rw,\n  dbus (send, receive) peer=(name=userns),\n}\n", "/usr/bin/bwrap", false},
		{"inside nested braces and globs", `profile bwrap /usr/bin/bwrap flags=(attach_disconnected) {
  allow file rwlkm /{**,},
  @{HOME}/{.cache,.local}/** rw,
  if defined @{sandbox} {
    userns,
  }
}
`, "/usr/bin/bwrap", true},
		{"only in a child profile", "profile bwrap /usr/bin/bwrap {\n  profile helper {\n    userns,\n  }\n}\n", "/usr/bin/bwrap", false},
		{"only in a hat", "profile bwrap /usr/bin/bwrap {\n  ^sandbox {\n    userns,\n  }\n}\n", "/usr/bin/bwrap", false},
		{"after a child profile closes", "profile bwrap /usr/bin/bwrap {\n  profile helper {\n    capability,\n  }\n  userns,\n}\n", "/usr/bin/bwrap", true},
		{"only in the next profile of the file", `profile bwrap /usr/bin/bwrap {
  capability,
}
profile unpriv_bwrap flags=(attach_disconnected) {
  allow userns,
}
`, "/usr/bin/bwrap", false},
		{"another binary's profile", "profile brave /opt/brave.com/brave/brave flags=(unconfined) {\n  userns,\n}\n", "/usr/bin/bwrap", false},
		{"glob attachment is not expanded", "profile bwrap /usr/{,local/}bin/bwrap {\n  userns,\n}\n", "/usr/bin/bwrap", false},
		{"unbalanced garbage does not panic", "profile bwrap /usr/bin/bwrap {\n }}} userns, {{{ ((( \"\n", "/usr/bin/bwrap", false},
	}
	for _, test := range tests {
		if got := profileGrantsUserns(test.profile, test.path); got != test.want {
			t.Errorf("%s: profileGrantsUserns = %v, want %v", test.name, got, test.want)
		}
	}
}

func TestAppArmorProfileGrantsUserns(t *testing.T) {
	t.Parallel()
	file := func(text string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(text)} }
	tests := []struct {
		name string
		root fstest.MapFS
		want string
	}{
		{"no apparmor.d", fstest.MapFS{}, ""},
		{"found", fstest.MapFS{"etc/apparmor.d/bwrap": file(ubuntuLocalProfile)}, "/etc/apparmor.d/bwrap"},
		{"first of several, in name order", fstest.MapFS{
			"etc/apparmor.d/zz-bwrap": file(ubuntuLocalProfile),
			"etc/apparmor.d/bwrap":    file(ubuntuLocalProfile)}, "/etc/apparmor.d/bwrap"},
		{"subdirectories are includes, not profiles", fstest.MapFS{
			"etc/apparmor.d/abstractions/bwrap": file(ubuntuLocalProfile),
			"etc/apparmor.d/local/bwrap":        file(ubuntuLocalProfile),
			"etc/apparmor.d/tunables/global":    file(ubuntuLocalProfile)}, ""},
		{"disabled with aa-disable", fstest.MapFS{
			"etc/apparmor.d/bwrap":         file(ubuntuLocalProfile),
			"etc/apparmor.d/disable/bwrap": file("")}, ""},
		{"package manager leftovers are not loaded", fstest.MapFS{
			"etc/apparmor.d/bwrap.dpkg-old": file(ubuntuLocalProfile),
			"etc/apparmor.d/bwrap~":         file(ubuntuLocalProfile),
			"etc/apparmor.d/.bwrap.swp":     file(ubuntuLocalProfile)}, ""},
		{"unreadable entries are skipped", fstest.MapFS{
			"etc/apparmor.d/a-fifo": {Mode: fs.ModeNamedPipe},
			"etc/apparmor.d/bwrap":  file(ubuntuLocalProfile)}, "/etc/apparmor.d/bwrap"},
	}
	for _, test := range tests {
		got, ok := AppArmorProfileGrantsUserns(test.root, "/usr/bin/bwrap")
		if got != test.want || ok != (test.want != "") {
			t.Errorf("%s: = %q, %v, want %q", test.name, got, ok, test.want)
		}
	}
}
