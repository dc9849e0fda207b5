/* Stand-in for ompi/peruse/peruse.h, which Debian's libopenmpi-dev does not ship. Open MPI is
 * built there without PERUSE, so the only use of this header by the installed internal headers
 * is a handle type in declarations that add no members to any structure: this typedef keeps
 * every layout the same. */
typedef void *peruse_event_h;
