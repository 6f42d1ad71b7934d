# The tfmesos image: the scheduler (`tfmesos run`, what the DC/OS package's Marathon app starts),
# the executor every task runs (`python3 -m tfmesos.executor`) and TensorFlow, in a venv at
# /opt/tfmesos that is first on PATH. Build it with `make image` (tools/image/build.sh), which
# passes the build secrets pip needs and picks podman or docker.
#
#   BASE        any Debian/Ubuntu-like image with python3 (>= 3.11) and its venv module, e.g. the
#               public python:3.11-slim-bookworm (the default); `make image` builds a local Debian 12
#               base from Debian packages instead (tools/image/base.sh), so no registry is needed.
#   TF_PACKAGE  tensorflow (default: what tfmesos' `tensorflow` extra installs). GPU variant:
#               TF_PACKAGE='tensorflow[and-cuda]' (pip brings CUDA and cuDNN; the agent's GPU isolator
#               brings the driver), optionally on a CUDA base such as
#               BASE=nvidia/cuda:12.5.1-cudnn-runtime-ubuntu24.04 plus python3-venv.
#   TF_VERSION  a TensorFlow release, e.g. 2.16.2; empty for the newest. pip picks the tf-keras
#               release that requires it, for Keras model.fit under the distribution strategies
#               (tasks get TF_USE_LEGACY_KERAS=1: job.legacy_keras).
#
# The install is README's `pip install '.[tensorflow]'`. Its TensorFlow part is made first, in a stage
# of its own copied whole into the image: that layer is reused as long as the stage is, so a change
# to tfmesos' code adds only a small layer on top, where the extra then finds TensorFlow in place.
# That stage's wheels are downloaded into a cache mount (pip skips those already there), shared by
# the builds on this machine and never part of a layer, then installed from it: `make
# images-real-mesos` builds two TensorFlow releases, and what they share (SciPy, scikit-learn,
# libclang, gRPC, Keras, ...: about 100 MB) is fetched once. No sources, no compilers reach the
# image. The secrets `pip` (a pip.conf: index,
# timeout) and `pipca` (the CA bundle it names) come from build.sh, made from the building
# machine's settings: pip reaches the index the way that machine does, and neither lands in a layer.
ARG BASE=docker.io/library/python:3.11-slim-bookworm

FROM ${BASE} AS tensorflow
ARG TF_PACKAGE=tensorflow
ARG TF_VERSION=
RUN --mount=type=secret,id=pip --mount=type=secret,id=pipca --mount=type=cache,target=/root/.cache/pip \
    if [ -s /run/secrets/pip ]; then export PIP_CONFIG_FILE=/run/secrets/pip; fi \
 && export PIP_DISABLE_PIP_VERSION_CHECK=1 WHEELS=/root/.cache/pip/wheelhouse \
 && python3 -m venv /opt/tfmesos \
 && set -- "${TF_PACKAGE}${TF_VERSION:+==$TF_VERSION}" tf-keras tensorboard scikit-learn \
 && /opt/tfmesos/bin/pip download -q -d "$WHEELS" "$@" \
 && /opt/tfmesos/bin/pip install -q --no-index --find-links "$WHEELS" "$@"

# The working tree as .dockerignore lets it in, read by the last step through a bind mount.
FROM ${BASE} AS source
COPY . /src

FROM ${BASE}
COPY --from=tensorflow /opt/tfmesos /opt/tfmesos
ENV PATH=/opt/tfmesos/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PYTHONUNBUFFERED=1
# The digest of the context's files (tools/image/source_digest.py, passed by build.sh), declared
# after the TensorFlow layers so they stay cached. The step below reads the context through a
# mount, which the layer cache does not see: this argument is what makes a changed tree rebuild
# that step (and what the marker and the label name).
ARG TFMESOS_SOURCE=unknown
LABEL org.tfmesos.source=${TFMESOS_SOURCE}
# tfmesos from the working tree with its tensorflow extra (built from a copy: pip writes into the
# folder it builds), then a marker of what the image holds, for people and for the tests that check
# a task ran in it.
RUN --mount=type=bind,from=source,source=/src,target=/src \
    --mount=type=secret,id=pip --mount=type=secret,id=pipca --mount=type=cache,target=/root/.cache/pip \
    if [ -s /run/secrets/pip ]; then export PIP_CONFIG_FILE=/run/secrets/pip; fi \
 && export PIP_DISABLE_PIP_VERSION_CHECK=1 \
 && cp -r /src /tmp/tfmesos-src && pip install -q "/tmp/tfmesos-src[tensorflow]" && rm -rf /tmp/tfmesos-src \
 && python3 -c "import tensorflow as tf, tfmesos; \
open('/etc/tfmesos-image', 'w').write(f'tfmesos {tfmesos.__version__}\ntensorflow {tf.__version__}\n')" \
 && (python3 -c "import importlib.metadata as m; print('tf-keras', m.version('tf-keras'))" >> /etc/tfmesos-image || true) \
 && echo "source $TFMESOS_SOURCE" >> /etc/tfmesos-image \
 && rm -rf /root/.keras && cat /etc/tfmesos-image
# Marathon starts an app that has a container and args (the DC/OS package's scheduler) with no
# command value: Mesos runs the image's entrypoint with the args, or, with none, the CMD's first
# word with the args after it ('tfmesos sh -c ...', refused). env runs its arguments as they are;
# `docker run IMAGE` alone still prints tfmesos' help.
ENTRYPOINT ["/usr/bin/env"]
CMD ["tfmesos", "--help"]
