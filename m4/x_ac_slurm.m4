# SPDX-License-Identifier: GPL-2.0-or-later
# X_AC_SLURM
# ----------
# --with-slurm-source=DIR: the configured source tree of the installed Slurm,
# needed to build the plugins (they include slurmctld's internal headers).  The
# tree must be configured and of the installed slurmctld's version: slurmctld
# refuses plugins built for another one.  --with-slurm-plugindir=DIR: where the
# plugins go (default: the installed Slurm's PluginDir, else ${libdir}/slurm).
# Sets SLURM_SRC, SLURM_PLUGINDIR and the conditional HAVE_SLURM_SRC.
AC_DEFUN([X_AC_SLURM], [
  AC_ARG_WITH([slurm-source],
    [AS_HELP_STRING([--with-slurm-source=DIR],
      [configured source tree of the installed Slurm; the plugins are built only
       when it is given])],
    [], [with_slurm_source=no])
  AC_ARG_WITH([slurm-plugindir],
    [AS_HELP_STRING([--with-slurm-plugindir=DIR],
      [where to install the plugins (default: the installed Slurm's PluginDir)])],
    [], [with_slurm_plugindir=""])

  x_ac_slurm=no
  AS_IF([test "x$with_slurm_source" != xno && test "x$with_slurm_source" != x], [
    SLURM_SRC=`cd "$with_slurm_source" 2>/dev/null && pwd`
    AS_IF([test -z "$SLURM_SRC" || test ! -f "$SLURM_SRC/src/slurmctld/slurmctld.h"],
      [AC_MSG_ERROR([--with-slurm-source=$with_slurm_source is not a Slurm source tree (no src/slurmctld/slurmctld.h)])])
    AS_IF([test ! -f "$SLURM_SRC/config.h" || test ! -f "$SLURM_SRC/slurm/slurm_version.h"],
      [AC_MSG_ERROR([$SLURM_SRC is not configured: run ./configure in it first (config.h and slurm/slurm_version.h are needed)])])
    AC_MSG_CHECKING([Slurm source version])
    x_ac_slurm_num=`sed -n 's/^#define SLURM_VERSION_NUMBER \(0x@<:@0-9a-fA-F@:>@*\).*/\1/p' "$SLURM_SRC/slurm/slurm_version.h"`
    AS_IF([test -z "$x_ac_slurm_num"],
      [AC_MSG_ERROR([no SLURM_VERSION_NUMBER in $SLURM_SRC/slurm/slurm_version.h])])
    x_ac_slurm_src_ver=`printf '%d.%02d.%d' $(( ($x_ac_slurm_num >> 16) & 255 )) $(( ($x_ac_slurm_num >> 8) & 255 )) $(( $x_ac_slurm_num & 255 ))`
    AC_MSG_RESULT([$x_ac_slurm_src_ver])
    AC_PATH_PROG([SLURMCTLD], [slurmctld], [], [$PATH:/usr/sbin:/sbin])
    AS_IF([test -z "$SLURMCTLD"],
      [AC_MSG_ERROR([slurmctld not found: the plugins must be built against the source of the installed Slurm (install slurmctld)])])
    AC_MSG_CHECKING([installed slurmctld version])
    x_ac_slurm_inst_ver=`"$SLURMCTLD" -V 2>/dev/null | sed -n 's/^slurm@<:@^ @:>@* \(@<:@0-9.@:>@*\).*/\1/p'`
    AC_MSG_RESULT([$x_ac_slurm_inst_ver])
    AS_IF([test "x$x_ac_slurm_src_ver" != "x$x_ac_slurm_inst_ver"],
      [AC_MSG_ERROR([Slurm source $SLURM_SRC is version $x_ac_slurm_src_ver but the installed slurmctld is $x_ac_slurm_inst_ver: plugins built against another version are refused by slurmctld (plugin_version); fetch the matching source with 'apt-get source slurm-wlm' or run scripts/setup])])
    AS_IF([test -z "$with_slurm_plugindir"], [
      with_slurm_plugindir=`dpkg -L slurmctld 2>/dev/null | sed -n 's|/burst_buffer_.*\.so$||p' | head -1`
      AS_IF([test -z "$with_slurm_plugindir"], [with_slurm_plugindir='${libdir}/slurm'])
    ])
    x_ac_slurm=yes
  ])
  AC_SUBST([SLURM_SRC])
  AC_SUBST([SLURM_PLUGINDIR], [$with_slurm_plugindir])
  AM_CONDITIONAL([HAVE_SLURM_SRC], [test "x$x_ac_slurm" = xyes])
])
