# The tfmesos image: the scheduler (`tfmesos run`, what the DC/OS package's Marathon app starts),
# the executor every task runs (`python3 -m tfmesos.executor`) and TensorFlow, in a venv at
# /opt/tfmesos that is first on PATH. Build it with `make image` (tools/image/build.sh), which
# passes the build secret pip needs and picks podman or docker.
#
#   BASE        any Debian/Ubuntu-like image with python3 (>= 3.11) and its venv module, e.g. the
#               public python:3.11-slim-bookworm (the default); `make image` builds a local Debian 12
#               base from Debian packages instead (tools/image/base.sh), so no registry is needed.
#   TF_PACKAGE  tensorflow-cpu (default). GPU variant: TF_PACKAGE='tensorflow[and-cuda]' (pip brings
#               CUDA and cuDNN; the agent's GPU isolator brings the driver), optionally on a CUDA
#               base such as BASE=nvidia/cuda:12.5.1-cudnn-runtime-ubuntu24.04 plus python3-venv.
#   TF_VERSION  a TensorFlow release, e.g. 2.16.2; empty for the newest.
#
# Two stages: pip, its caches and the project's sources stay in the first; the image gets the base
# plus the finished venv (no compilers, no caches, no docs).
ARG BASE=docker.io/library/python:3.11-slim-bookworm

FROM ${BASE} AS build
ARG TF_PACKAGE=tensorflow-cpu
ARG TF_VERSION=
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
# The secret `pip` is a pip.conf (index, CA bundle) made by build.sh from the building machine's
# settings: it reaches pip without landing in a layer or in the image's history.
# TensorFlow first, in a layer of its own: a change to tfmesos' code reuses it. install_pymesos.py's
# compiled parser needs a C compiler, which the image leaves out: the error it prints is expected and
# it installs pymesos' pure-Python parser instead.
COPY tools/install_pymesos.py /src/tools/install_pymesos.py
RUN --mount=type=secret,id=pip --mount=type=secret,id=pipca \
    if [ -s /run/secrets/pip ]; then export PIP_CONFIG_FILE=/run/secrets/pip; fi \
 && python3 -m venv /opt/tfmesos \
 && /opt/tfmesos/bin/python /src/tools/install_pymesos.py \
 && /opt/tfmesos/bin/pip install -q "${TF_PACKAGE}${TF_VERSION:+==$TF_VERSION}" tensorboard scikit-learn \
 && /opt/tfmesos/bin/pip uninstall -q -y Cython
COPY . /src
RUN --mount=type=secret,id=pip --mount=type=secret,id=pipca \
    if [ -s /run/secrets/pip ]; then export PIP_CONFIG_FILE=/run/secrets/pip; fi \
 && /opt/tfmesos/bin/pip install -q /src \
 && /opt/tfmesos/bin/python -c "import tensorflow as tf, tfmesos; print('TensorFlow', tf.__version__, 'tfmesos', tfmesos.__version__)"

FROM ${BASE}
COPY --from=build /opt/tfmesos /opt/tfmesos
ENV PATH=/opt/tfmesos/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PYTHONUNBUFFERED=1
# What is in the image, for people and for the tests that check a task ran in it.
RUN /opt/tfmesos/bin/python -c "import tensorflow as tf, tfmesos, sys; \
open('/etc/tfmesos-image', 'w').write(f'tfmesos {tfmesos.__version__}\ntensorflow {tf.__version__}\n')" \
 && cat /etc/tfmesos-image
CMD ["tfmesos", "--help"]
