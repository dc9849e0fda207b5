# Runs at install time (cmake --install, cpack), from packaging/systemd/CMakeLists.txt:
# makes mqd-proxy-server.service and /etc/default/mqd-proxy-server for the prefix being
# installed to (CMAKE_INSTALL_PREFIX here is the install-time one) and installs them, with
# mqd-proxy-server.socket as it is (it names no path); DESTDIR is honoured by file(INSTALL).
#
# In:  MQD_SERVICE_IN, MQD_DEFAULT_IN   the templates
#      MQD_SOCKET_UNIT                  the socket unit, installed as it is
#      MQD_STAGE                        scratch directory in the build tree
#      MQD_BINDIR                       CMAKE_INSTALL_BINDIR (relative to the prefix, or not)
#      MQD_UNITDIR_FOR_USR              systemd's unit directory, for the prefix /usr
#      MQD_OMPI_DLL                     the vendor DLL the settings name by default
#
# An existing settings file is never replaced: it is the administrator's (the .deb marks it a
# conffile, so dpkg asks instead).
if(CMAKE_INSTALL_PREFIX MATCHES "^/usr/?$")
  set(etc /etc)
  set(unitdir ${MQD_UNITDIR_FOR_USR})
else()
  set(etc ${CMAKE_INSTALL_PREFIX}/etc)
  set(unitdir ${CMAKE_INSTALL_PREFIX}/lib/systemd/system)
endif()
if(IS_ABSOLUTE "${MQD_BINDIR}")
  set(MQD_SERVER ${MQD_BINDIR}/mqd-proxy-server)
else()
  set(MQD_SERVER ${CMAKE_INSTALL_PREFIX}/${MQD_BINDIR}/mqd-proxy-server)
endif()
set(MQD_DEFAULT_FILE ${etc}/default/mqd-proxy-server)

# One scratch directory per destination: installs to different places may run at once.
string(MD5 destination "$ENV{DESTDIR}|${CMAKE_INSTALL_PREFIX}")
set(stage ${MQD_STAGE}/${destination})
configure_file(${MQD_SERVICE_IN} ${stage}/mqd-proxy-server.service @ONLY)
configure_file(${MQD_DEFAULT_IN} ${stage}/mqd-proxy-server @ONLY)

file(INSTALL ${stage}/mqd-proxy-server.service ${MQD_SOCKET_UNIT} DESTINATION ${unitdir})
if(EXISTS "$ENV{DESTDIR}${MQD_DEFAULT_FILE}")
  message(STATUS "Keeping: $ENV{DESTDIR}${MQD_DEFAULT_FILE}")
else()
  file(INSTALL ${stage}/mqd-proxy-server DESTINATION ${etc}/default)
endif()
