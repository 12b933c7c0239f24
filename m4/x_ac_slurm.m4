# SPDX-License-Identifier: GPL-2.0-or-later
# X_AC_SLURM
# ----------
# --with-slurm-source=DIR: the configured source tree of the installed Slurm,
# needed to build the plugins (they include slurmctld's internal headers).  The
# tree must be configured and of the installed slurmctld's version: slurmctld
# refuses plugins built for another one.  --with-slurm-plugindir=DIR: where the
# plugins go (default: the installed Slurm's PluginDir, else ${libdir}/slurm).
# --disable-slurm-version-check: build for a Slurm other than the installed
# one (a package build host, a compile check).  --enable-slurm-untested: allow
# a release newer than those the plugins know.
#
# The releases: the plugins build from 22.05 on (slurm_compat.h keeps what
# differs); x_ac_slurm_tested are the releases the project's test suites ran
# on, x_ac_slurm_known the major releases the plugins were compiled against.
# Another micro release of a known major one is built with a warning.
#
# Sets SLURM_SRC, SLURM_VERSION (e.g. 22.05.8), SLURM_PLUGINDIR and the
# conditional HAVE_SLURM_SRC.

AC_DEFUN([X_AC_SLURM], [
  x_ac_slurm_tested="22.05.8 24.11.5"
  x_ac_slurm_known="22.05 23.02 23.11 24.05 24.11 25.05 25.11"
  x_ac_slurm_oldest=22.05
  x_ac_slurm_newest=25.11
  AC_ARG_WITH([slurm-source],
    [AS_HELP_STRING([--with-slurm-source=DIR],
      [configured source tree of the installed Slurm (22.05 to 25.11); the plugins are built only when it is given])],
    [], [with_slurm_source=no])
  AC_ARG_WITH([slurm-plugindir],
    [AS_HELP_STRING([--with-slurm-plugindir=DIR],
      [where to install the plugins (default: the installed Slurm's PluginDir)])],
    [], [with_slurm_plugindir=""])
  AC_ARG_ENABLE([slurm-version-check],
    [AS_HELP_STRING([--disable-slurm-version-check],
      [build the plugins for a Slurm release other than the installed
       slurmctld's (only that release's slurmctld loads them)])],
    [], [enable_slurm_version_check=yes])
  AC_ARG_ENABLE([slurm-untested],
    [AS_HELP_STRING([--enable-slurm-untested],
      [try to build the plugins against a Slurm release newer than
       25.11])],
    [], [enable_slurm_untested=no])

  x_ac_slurm=no
  SLURM_VERSION=""
  AS_IF([test "x$with_slurm_source" = xyes],
    [AC_MSG_ERROR([--with-slurm-source needs a directory: the configured source tree of the installed Slurm (scripts/slurm-source fetches and configures one)])])
  AS_IF([test "x$with_slurm_source" != xno && test "x$with_slurm_source" != x], [
    AC_MSG_CHECKING([for a Slurm source tree in $with_slurm_source])
    SLURM_SRC=`cd "$with_slurm_source" 2>/dev/null && pwd`
    AS_IF([test -z "$SLURM_SRC"],
      [AC_MSG_RESULT([no])
       AC_MSG_ERROR([--with-slurm-source=$with_slurm_source: no such directory])])
    x_ac_slurm_missing=""
    for f in slurm/slurm.h slurm/slurm_version.h.in src/slurmctld/slurmctld.h \
             src/plugins/burst_buffer/common/burst_buffer_common.c; do
      test -f "$SLURM_SRC/$f" || x_ac_slurm_missing="$x_ac_slurm_missing $f"
    done
    AS_IF([test -n "$x_ac_slurm_missing"],
      [AC_MSG_RESULT([no])
       AC_MSG_ERROR([$SLURM_SRC is not a Slurm source tree: it has no$x_ac_slurm_missing])])
    AC_MSG_RESULT([yes])

    AC_MSG_CHECKING([whether $SLURM_SRC is configured])
    x_ac_slurm_missing=""
    for f in config.h slurm/slurm_version.h; do
      test -f "$SLURM_SRC/$f" || x_ac_slurm_missing="$x_ac_slurm_missing $f"
    done
    AS_IF([test -n "$x_ac_slurm_missing"],
      [AC_MSG_RESULT([no])
       AC_MSG_ERROR([the Slurm source tree $SLURM_SRC is not configured: it has no$x_ac_slurm_missing (run ./configure in it, or use scripts/slurm-source)])])
    AC_MSG_RESULT([yes])

    AC_MSG_CHECKING([Slurm release of $SLURM_SRC])
    x_ac_slurm_num=`sed -n 's/^#define SLURM_VERSION_NUMBER \(0x@<:@0-9a-fA-F@:>@*\).*/\1/p' "$SLURM_SRC/slurm/slurm_version.h"`
    AS_IF([test -z "$x_ac_slurm_num"],
      [AC_MSG_RESULT([unknown])
       AC_MSG_ERROR([$SLURM_SRC/slurm/slurm_version.h defines no SLURM_VERSION_NUMBER: not a configured Slurm tree])])
    SLURM_VERSION=`printf '%d.%02d.%d' $(( ($x_ac_slurm_num >> 16) & 255 )) $(( ($x_ac_slurm_num >> 8) & 255 )) $(( $x_ac_slurm_num & 255 ))`
    x_ac_slurm_major=${SLURM_VERSION%.*}
    AC_MSG_RESULT([$SLURM_VERSION])

    # Which of the releases the project knows it is.
    x_ac_slurm_status=unknown
    for v in $x_ac_slurm_known; do
      test "x$v" = "x$x_ac_slurm_major" && x_ac_slurm_status=known
    done
    for v in $x_ac_slurm_tested; do
      test "x$v" = "x$SLURM_VERSION" && x_ac_slurm_status=tested
    done
    x_ac_slurm_cmp=`printf '%s\n%s\n' "$x_ac_slurm_major" "$x_ac_slurm_oldest" | sort -V | head -1`
    AS_IF([test "x$x_ac_slurm_status" = xunknown && test "x$x_ac_slurm_cmp" = "x$x_ac_slurm_major"],
      [AC_MSG_ERROR([Slurm $SLURM_VERSION in $SLURM_SRC is older than $x_ac_slurm_oldest, the oldest release the plugins build against])])
    AS_IF([test "x$x_ac_slurm_status" = xunknown && test "x$enable_slurm_untested" != xyes],
      [AC_MSG_ERROR([Slurm $SLURM_VERSION in $SLURM_SRC is newer than the releases the plugins know ($x_ac_slurm_known): its plugin interface may differ in ways src/plugins/burst_buffer/harmonia/slurm_compat.h does not handle; --enable-slurm-untested tries anyway])])
    AC_MSG_CHECKING([whether Harmonia was tested with Slurm $SLURM_VERSION])
    AS_CASE([$x_ac_slurm_status],
      [tested], [AC_MSG_RESULT([yes])],
      [known], [AC_MSG_RESULT([no, but its interface is known])
                AC_MSG_WARN([Slurm $SLURM_VERSION was never tested with Harmonia (tested: $x_ac_slurm_tested); the plugins are built, run the Slurm test suite (make -C testsuite check) before deploying them])],
      [AC_MSG_RESULT([no, and its interface is not known])
       AC_MSG_WARN([Slurm $SLURM_VERSION is newer than $x_ac_slurm_newest: built with --enable-slurm-untested, never tested])])

    AS_IF([test "x$enable_slurm_version_check" != xno], [
      AC_PATH_PROG([SLURMCTLD], [slurmctld], [], [$PATH:/usr/sbin:/sbin])
      AS_IF([test -z "$SLURMCTLD"],
        [AC_MSG_ERROR([slurmctld not found: the plugins are built for the installed Slurm (install slurmctld, or --disable-slurm-version-check to build for Slurm $SLURM_VERSION without it)])])
      AC_MSG_CHECKING([installed slurmctld release])
      x_ac_slurm_inst_ver=`"$SLURMCTLD" -V 2>/dev/null | sed -n 's/^slurm@<:@^ @:>@* \(@<:@0-9.@:>@*\).*/\1/p'`
      AC_MSG_RESULT([${x_ac_slurm_inst_ver:-unknown}])
      AS_IF([test "x$SLURM_VERSION" != "x$x_ac_slurm_inst_ver"],
        [AC_MSG_ERROR([Slurm source $SLURM_SRC is release $SLURM_VERSION but the installed slurmctld is ${x_ac_slurm_inst_ver:-of an unknown release}: slurmctld refuses plugins built for another release (plugin_version); 'scripts/slurm-source installed DIR' fetches and configures the matching source])])
    ])
    AS_IF([test -z "$with_slurm_plugindir"], [
      # Debian ships Slurm's own plugins in slurm-wlm-basic-plugins
      for p in slurm-wlm-basic-plugins slurmctld; do
        with_slurm_plugindir=`dpkg-query -L $p 2>/dev/null | sed -n 's|/auth_munge\.so$||p;s|/burst_buffer_@<:@a-z@:>@*\.so$||p' | head -1`
        test -n "$with_slurm_plugindir" && break
      done
      AS_IF([test -z "$with_slurm_plugindir"], [with_slurm_plugindir='${libdir}/slurm'])
    ])
    x_ac_slurm=yes
  ])
  AC_SUBST([SLURM_SRC])
  AC_SUBST([SLURM_VERSION])
  AC_SUBST([SLURM_PLUGINDIR], [$with_slurm_plugindir])
  AM_CONDITIONAL([HAVE_SLURM_SRC], [test "x$x_ac_slurm" = xyes])
])
