package com.signoff.client;

/**
 * The bearer JWT of the person deciding, asked for before every request, so a CRM can hand
 * over a refreshed token without building a new client. The token must be issued to the CRM's
 * client system (its {@code azp}), e.g. {@code jdk8-crm}.
 */
public interface TokenSource {
    String bearerToken();
}
