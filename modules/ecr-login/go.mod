// A replacement, written for func-operator, for the one module of knative.dev/func
// v0.50.1's requirements that the module proxy does not serve (see README.md).
module github.com/awslabs/amazon-ecr-credential-helper/ecr-login

go 1.24

require github.com/docker/docker-credential-helpers v0.9.6
