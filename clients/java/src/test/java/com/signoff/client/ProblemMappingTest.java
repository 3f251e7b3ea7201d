package com.signoff.client;

/** problem+json answers become the exception of their code or HTTP status family. */
public final class ProblemMappingTest {
    private static SignoffException map(int status, String code) {
        String body = "{\"type\":\"urn:signoff:problem:" + code + "\",\"title\":\"T\",\"status\":"
                + status + ",\"detail\":\"d\",\"code\":\"" + code + "\",\"proposal_id\":\"prop_1\"}";
        return Problems.fromAnswer(
                new HttpAnswer(status, "application/problem+json", null, body), "confirm:v1:k");
    }

    public void testEachStatusFamilyHasItsClass() {
        Check.equal(BadRequestException.class, map(400, "invalid_request").getClass());
        Check.equal(NotAuthenticatedException.class, map(401, "not_authenticated").getClass());
        Check.equal(ForbiddenException.class, map(403, "not_entitled").getClass());
        Check.equal(NotFoundException.class, map(404, "not_found").getClass());
        Check.equal(ConflictException.class, map(409, "invalid_state").getClass());
        Check.equal(UnprocessableException.class, map(422, "idempotency_key_reused").getClass());
        Check.equal(ServiceUnavailableException.class, map(503, "unavailable").getClass());
        Check.equal(SignoffException.class, map(418, "teapot").getClass());
    }

    public void testCodesWithTheirOwnClass() {
        SignoffException surface = map(403, "surface_not_allowed");
        Check.equal(SurfaceNotAllowedException.class, surface.getClass());
        Check.isTrue(surface instanceof ForbiddenException, "a surface refusal is a 403");
        SignoffException stale = map(409, "version_conflict");
        Check.equal(VersionConflictException.class, stale.getClass());
        Check.isTrue(stale instanceof ConflictException, "a version conflict is a 409");
    }

    public void testTheProblemTravelsWithTheException() {
        SignoffException refused = map(409, "version_conflict");
        Check.equal(409, refused.getStatus());
        Check.equal("version_conflict", refused.getCode());
        Check.equal("d", refused.getDetail());
        Check.equal("prop_1", refused.getMember("proposal_id"));
        Check.equal("confirm:v1:k", refused.getIdempotencyKey());
    }

    public void testAnAnswerThatIsNotAProblemKeepsItsStatus() {
        SignoffException gateway = Problems.fromAnswer(
                new HttpAnswer(502, "text/html", null, "<html>bad gateway</html>"), null);
        Check.equal(ServiceUnavailableException.class, gateway.getClass());
        Check.equal("http_502", gateway.getCode());
        Check.equal("<html>bad gateway</html>", gateway.getDetail());
    }
}
