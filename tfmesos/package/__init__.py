"""The DC/OS package (universe-package/) and Marathon deployment of the tfmesos scheduler:
render the app as Cosmos does, check the package as the universe does, build a universe
repository, and deploy/undeploy on a plain Marathon."""
