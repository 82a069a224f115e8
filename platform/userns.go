package platform

import "fmt"

// Unsupported reports a host where bwrap can never run, whatever is configured: no Linux
// kernel underneath, or WSL1's emulation of one.
func (h Host) Unsupported() (reason string, unsupported bool) {
	switch h.Kind {
	case KindDarwin:
		return "macOS has no Linux kernel and no bubblewrap", true
	case KindWindows:
		return "Windows has no bubblewrap; run bwrapkit inside a WSL2 distribution", true
	case KindOther:
		return fmt.Sprintf("%s is not Linux; bubblewrap runs only on Linux", h.OS), true
	case KindWSL1:
		return "WSL1 emulates Linux without user namespaces; bubblewrap needs WSL2", true
	}
	return "", false
}

// Privileged reports capable(CAP_SYS_ADMIN) in the kernel's sense: the capability in the
// initial user namespace. The Debian knob exempts such a process.
func (h Host) Privileged() bool { return h.CapSysAdmin && h.InitialUserNamespace }

// UserNamespacesBlocked says whether a kernel setting keeps this process from creating any
// user namespace, and which. The AppArmor restriction is not among them, because a profile
// lifts it for one binary: see AppArmorRestrictsUserns and AppArmorProfileGrantsUserns.
func (h Host) UserNamespacesBlocked() (reason string, blocked bool) {
	reason, _ = h.usernsBlock()
	return reason, reason != ""
}

// UserNamespacesRemedy says how to lift what UserNamespacesBlocked reports; "" when nothing is blocked.
func (h Host) UserNamespacesRemedy() string {
	_, remedy := h.usernsBlock()
	return remedy
}

// AppArmorRestrictsUserns reports Ubuntu's restriction (23.10 and later): unconfined
// processes get a user namespace without capabilities, so bwrap fails to map its uid unless
// a profile for its exact path grants userns. Root is not assumed exempt.
func (h Host) AppArmorRestrictsUserns() bool {
	return h.AppArmorRestrictUserns.Present && h.AppArmorRestrictUserns.Value != 0
}

// usernsBlock finds the first setting that blocks user namespaces, most absolute first, so
// the remedy offered is one that suffices on its own for that setting.
func (h Host) usernsBlock() (reason, remedy string) {
	switch {
	case h.Kind == KindWSL1:
		return "WSL1 has no user namespaces", "convert the distribution to WSL2 (in Windows: wsl --set-version <distro> 2)"
	case h.UsernsBuild.State == UsernsNotBuilt:
		return "the kernel was built without user namespaces (" + h.UsernsBuild.Evidence + ")",
			"boot a kernel built with CONFIG_USER_NS=y (every major distribution's kernel is); no setting can add them to this one"
	case isZero(h.UsernsModuleEnable):
		return "user namespaces are disabled at boot (/sys/module/user_namespace/parameters/enable = N)",
			"boot with user_namespace.enable=1 on the kernel command line (grubby --update-kernel=ALL --args=user_namespace.enable=1), then reboot"
	case isZero(h.MaxUserNamespaces):
		return "user.max_user_namespaces = 0 forbids user namespaces to every process",
			"sysctl -w user.max_user_namespaces=15000, and persist it in /etc/sysctl.d/"
	case isZero(h.UnprivilegedUsernsClone) && !h.Privileged():
		return "kernel.unprivileged_userns_clone = 0 forbids user namespaces to processes without CAP_SYS_ADMIN",
			"sysctl -w kernel.unprivileged_userns_clone=1, and persist it in /etc/sysctl.d/"
	}
	return "", ""
}

// isZero is true only for a knob that was read and is 0; an absent knob blocks nothing.
func isZero(knob Knob) bool { return knob.Present && knob.Value == 0 }
