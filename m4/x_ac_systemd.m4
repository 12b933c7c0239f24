# SPDX-License-Identifier: GPL-2.0-or-later
# X_AC_SYSTEMD
# ------------
# libsystemd (sd_notify) when present: HAVE_LIBSYSTEMD, SYSTEMD_CFLAGS/LIBS.
# systemdunitdir: --with-systemdunitdir=DIR, else systemd's own
# systemdsystemunitdir (pkg-config systemd), else ${prefix}/lib/systemd/system.
AC_DEFUN([X_AC_SYSTEMD], [
  PKG_CHECK_MODULES([SYSTEMD], [libsystemd], [x_ac_systemd_lib=yes], [x_ac_systemd_lib=no])
  AS_IF([test "x$x_ac_systemd_lib" = xyes],
    [AC_DEFINE([HAVE_LIBSYSTEMD], [1], [sd_notify() available])])

  AC_ARG_WITH([systemdunitdir],
    [AS_HELP_STRING([--with-systemdunitdir=DIR],
      [where to install bbmgrd.service (default: systemd's systemdsystemunitdir)])],
    [], [with_systemdunitdir=""])
  AC_MSG_CHECKING([for the systemd unit directory])
  AS_IF([test -z "$with_systemdunitdir"], [
    PKG_CHECK_VAR([with_systemdunitdir], [systemd], [systemdsystemunitdir])
    AS_IF([test -z "$with_systemdunitdir"],
      [with_systemdunitdir='${prefix}/lib/systemd/system'])
  ])
  AC_MSG_RESULT([$with_systemdunitdir])
  AC_SUBST([systemdunitdir], [$with_systemdunitdir])
])
